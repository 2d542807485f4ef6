import { average, timelineSvg, type SoakTimeline } from './timeline-svg.report';

/** The soak's picture, drawn from a tiny made-up timeline (docs/harness.md, "Soak"). */
describe('timelineSvg', () => {
  const timeline: SoakTimeline = {
    durationMs: 10_000,
    faultPhaseMs: 8_000,
    faults: [
      { atMs: 1_000, durationMs: 2_000, kind: 'lock-net-reset', replica: 2 },
      { atMs: 4_000, durationMs: 1_000, kind: 'executor-kill' },
      { atMs: 6_000, durationMs: 500, kind: 'lock-net-reset', replica: 0 },
    ],
    postedPerSecond: [0, 2, 4, 4, 0, 0, 4, 4, 2, 0],
    grantsPerSecond: [
      { name: 'lock-server-0', perSecond: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1] },
      { name: 'lock-server-1', perSecond: [0, 2, 0, 2, 0, 2, 0, 2, 0, 2] },
    ],
    fencedAtMs: [4_500, 4_600],
    violations: [],
  };

  it('draws one lane per fault kind, a band per fault, a line per series and a tick per fenced write', () => {
    const svg = timelineSvg(timeline);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg.match(/>executor-kill<\/text>/g)).toHaveLength(1);
    expect(svg.match(/>lock-net-reset<\/text>/g)).toHaveLength(1);
    expect(svg.match(/<title>lock-net-reset on replica 2<\/title>/g)).toHaveLength(1);
    expect(svg.match(/fill-opacity="0.55"/g)).toHaveLength(3);
    // 1 payouts line + 2 replicas.
    expect(svg.match(/<polyline /g)).toHaveLength(3);
    expect(svg).toContain('grants / s, lock-server-1');
    expect(svg).toContain('fenced writes (2)');
    expect(svg.match(/M[\d.]+ [\d.]+v/g)).toHaveLength(2);
    expect(svg).toContain('violations (0)');
    expect(svg).not.toContain('fill="#d62728"');
  });

  it('puts a band where its fault was on the time axis', () => {
    const svg = timelineSvg(timeline);
    // 1.0 s of 10 s along a plot from x=190, 990 wide: x = 289, width 198.
    expect(svg).toContain('<rect x="289" y="');
    expect(svg).toMatch(/<rect x="289" y="\d+" width="198"/);
  });

  it('marks each violation in red, at its time or at the right edge', () => {
    const svg = timelineSvg({
      ...timeline,
      violations: [
        { atMs: 5_000, label: 'lock-net-reset: injection failed' },
        { atMs: null, label: 'INV-01: <two holders>' },
      ],
    });
    expect(svg).toContain('violations (2)');
    expect(svg.match(/fill="#d62728"><title>/g)).toHaveLength(2);
    expect(svg).toContain('INV-01: &lt;two holders&gt;');
  });

  it('averages per-second counts over buckets, missing seconds as 0', () => {
    expect(average([1, 3, 5], 4, 2)).toEqual([2, 2.5]);
    expect(average([2, 4], 2, 1)).toEqual([2, 4]);
  });
});
