/**
 * The soak's timeline picture (docs/harness.md, "Soak"): a self-contained SVG
 * drawn from plain numbers, with no dependency, so the report carries its own
 * story. Pure: the same timeline gives the same picture.
 */

/** Everything the picture shows, as offsets from the start of the fault phase. */
export interface SoakTimeline {
  /** Length of the x axis: the fault phase and the drain after it. */
  durationMs: number;
  /** Where the fault phase ended and everything was healed. */
  faultPhaseMs: number;
  faults: Array<{
    atMs: number;
    durationMs: number;
    kind: string;
    replica?: number;
    failed?: boolean;
  }>;
  /** Payouts that became POSTED in each second (index = second). */
  postedPerSecond: number[];
  /** Grants each replica's recorder saw in each second. */
  grantsPerSecond: Array<{ name: string; perSecond: number[] }>;
  /** Fenced-out writes (a guard refused a stale token), by time. */
  fencedAtMs: number[];
  /** Violations; those with no time of their own are drawn at the right edge. */
  violations: Array<{ atMs: number | null; label: string }>;
}

const WIDTH = 1200;
const LEFT = 190;
const RIGHT = 20;
const LANE = 16;
const RATE_HEIGHT = 180;
const PLOT = WIDTH - LEFT - RIGHT;
/** Lines are averaged over buckets so that a 30-minute run stays readable (~300 points). */
const MAX_POINTS = 300;
const LINE_COLOURS = ['#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#17becf'];

interface Frame {
  x: (ms: number) => number;
  top: number;
}

export function timelineSvg(t: SoakTimeline): string {
  const kinds = [...new Set(t.faults.map((f) => f.kind))].sort();
  const durationMs = Math.max(t.durationMs, 1_000);
  const x = (ms: number) => LEFT + (Math.min(Math.max(ms, 0), durationMs) / durationMs) * PLOT;
  const title = 30;
  const lanesTop = title + 10;
  const marksTop = lanesTop + kinds.length * LANE + 8;
  const rateTop = marksTop + 2 * LANE + 16;
  const axisY = rateTop + RATE_HEIGHT;
  const height = axisY + 70;
  const body = [
    `<rect x="0" y="0" width="${WIDTH}" height="${height}" fill="white"/>`,
    text(LEFT, 20, 'soak timeline: faults, payouts, grants, fenced writes, violations', 'bold'),
    ...faultLanes(t, kinds, { x, top: lanesTop }),
    ...markLanes(t, { x, top: marksTop }),
    ...rateChart(t, { x, top: rateTop }),
    ...timeAxis(durationMs, t.faultPhaseMs, { x, top: axisY }, lanesTop),
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" ` +
      `viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** One lane per fault kind, each fault a shaded band (red outline when it failed). */
function faultLanes(t: SoakTimeline, kinds: string[], f: Frame): string[] {
  const out: string[] = [];
  kinds.forEach((kind, i) => {
    const y = f.top + i * LANE;
    if (i % 2 === 0) out.push(rect(LEFT, y, PLOT, LANE, '#f4f4f4'));
    out.push(text(LEFT - 6, y + 12, kind, 'end'));
  });
  for (const fault of t.faults) {
    const y = f.top + kinds.indexOf(fault.kind) * LANE + 2;
    const x0 = f.x(fault.atMs);
    const w = Math.max(f.x(fault.atMs + fault.durationMs) - x0, 1.5);
    const stroke = fault.failed ? ' stroke="#d62728" stroke-width="1.5"' : '';
    const tip = `${fault.kind}${fault.replica === undefined ? '' : ` on replica ${fault.replica}`}`;
    out.push(
      `<rect x="${r1(x0)}" y="${y}" width="${r1(w)}" height="${LANE - 4}" fill="#7f7f7f" ` +
        `fill-opacity="0.55"${stroke}><title>${esc(tip)}</title></rect>`,
    );
    if (fault.replica !== undefined && w >= 7)
      out.push(text(x0 + w / 2, y + 10, String(fault.replica), 'middle', '9', 'white'));
  }
  return out;
}

/** Fenced writes as ticks, violations as red marks (with their count, 0 expected). */
function markLanes(t: SoakTimeline, f: Frame): string[] {
  const fencedY = f.top;
  const violY = f.top + LANE;
  const violColour = t.violations.length > 0 ? '#d62728' : '#222';
  const out = [
    text(LEFT - 6, fencedY + 12, `fenced writes (${t.fencedAtMs.length})`, 'end'),
    // Red only when there is one: a clean run reads clean at a glance.
    text(LEFT - 6, violY + 12, `violations (${t.violations.length})`, 'end', '11', violColour),
  ];
  const ticks = t.fencedAtMs.map((ms) => `M${r1(f.x(ms))} ${fencedY + 2}v${LANE - 4}`);
  if (ticks.length > 0)
    out.push(`<path d="${ticks.join('')}" stroke="#e377c2" stroke-width="1" fill="none"/>`);
  for (const v of t.violations) {
    const vx = v.atMs === null ? LEFT + PLOT - 4 : f.x(v.atMs);
    out.push(
      `<rect x="${r1(vx - 2)}" y="${violY + 1}" width="4" height="${LANE - 2}" fill="#d62728">` +
        `<title>${esc(v.label)}</title></rect>`,
    );
  }
  return out;
}

/** Payouts POSTED per second and grants per second per replica, as lines. */
function rateChart(t: SoakTimeline, f: Frame): string[] {
  const series = [
    { name: 'payouts POSTED / s', perSecond: t.postedPerSecond, colour: '#000000' },
    ...t.grantsPerSecond.map((g, i) => ({
      name: `grants / s, ${g.name}`,
      perSecond: g.perSecond,
      colour: LINE_COLOURS[i % LINE_COLOURS.length],
    })),
  ];
  const seconds = Math.ceil(Math.max(t.durationMs, 1_000) / 1_000);
  const bucket = Math.max(1, Math.ceil(seconds / MAX_POINTS));
  const averaged = series.map((s) => ({ ...s, values: average(s.perSecond, seconds, bucket) }));
  const max = Math.max(1, ...averaged.flatMap((s) => s.values));
  const y = (v: number) => f.top + RATE_HEIGHT - (v / max) * RATE_HEIGHT;
  const out = [
    `<rect x="${LEFT}" y="${f.top}" width="${PLOT}" height="${RATE_HEIGHT}" fill="none" stroke="#cccccc"/>`,
    text(LEFT - 6, f.top + 10, r1(max), 'end'),
    text(LEFT - 6, f.top + RATE_HEIGHT, '0', 'end'),
    text(LEFT - 6, f.top + RATE_HEIGHT / 2, `per second (${bucket} s mean)`, 'end'),
  ];
  averaged.forEach((s, i) => {
    const points = s.values.map((v, b) => `${r1(f.x((b + 0.5) * bucket * 1_000))},${r1(y(v))}`);
    out.push(
      `<polyline points="${points.join(' ')}" fill="none" stroke="${s.colour}" stroke-width="1.2"/>`,
    );
    const lx = LEFT + (i % 4) * 240;
    const ly = f.top + RATE_HEIGHT + 34 + Math.floor(i / 4) * 14;
    out.push(
      `<line x1="${lx}" y1="${ly - 4}" x2="${lx + 18}" y2="${ly - 4}" stroke="${s.colour}"/>`,
    );
    out.push(text(lx + 22, ly, s.name));
  });
  return out;
}

/** Means over buckets of `bucket` seconds, a missing second counting as 0. */
export function average(perSecond: readonly number[], seconds: number, bucket: number): number[] {
  const out: number[] = [];
  for (let start = 0; start < seconds; start += bucket) {
    let sum = 0;
    const end = Math.min(start + bucket, seconds);
    for (let s = start; s < end; s++) sum += perSecond[s] ?? 0;
    out.push(sum / (end - start));
  }
  return out;
}

/** Minutes (or seconds for a short run) along the bottom, and where the faults stopped. */
function timeAxis(durationMs: number, faultPhaseMs: number, f: Frame, top: number): string[] {
  const steps = [5, 10, 30, 60, 120, 300, 600, 1_800];
  const stepS = steps.find((s) => durationMs / 1_000 / s <= 12) ?? 3_600;
  const out = [
    `<line x1="${LEFT}" y1="${f.top}" x2="${LEFT + PLOT}" y2="${f.top}" stroke="#333"/>`,
  ];
  for (let s = 0; s * 1_000 <= durationMs; s += stepS) {
    const tx = r1(f.x(s * 1_000));
    const label = stepS >= 60 ? `${s / 60} min` : `${s} s`;
    out.push(`<line x1="${tx}" y1="${f.top}" x2="${tx}" y2="${f.top + 4}" stroke="#333"/>`);
    out.push(text(f.x(s * 1_000), f.top + 16, label, 'middle'));
  }
  const hx = r1(f.x(faultPhaseMs));
  out.push(
    `<line x1="${hx}" y1="${top}" x2="${hx}" y2="${f.top}" stroke="#555" stroke-dasharray="4 3"/>`,
    // Left of the line when the drain is too short to hold the label on its right.
    f.x(faultPhaseMs) > LEFT + PLOT - 110
      ? text(f.x(faultPhaseMs) - 3, top - 2, 'faults stopped, draining', 'end')
      : text(f.x(faultPhaseMs) + 3, top - 2, 'faults stopped, draining'),
  );
  return out;
}

function rect(x: number, y: number, w: number, h: number, fill: string): string {
  return `<rect x="${r1(x)}" y="${r1(y)}" width="${r1(w)}" height="${r1(h)}" fill="${fill}"/>`;
}

function text(
  x: number,
  y: number,
  s: string,
  anchor: 'start' | 'middle' | 'end' | 'bold' = 'start',
  size = '11',
  fill = '#222',
): string {
  const a = anchor === 'bold' ? 'start" font-weight="bold' : anchor;
  return `<text x="${r1(x)}" y="${r1(y)}" text-anchor="${a}" font-size="${size}" fill="${fill}">${esc(s)}</text>`;
}

function r1(n: number): string {
  return String(Math.round(n * 10) / 10);
}

function esc(s: string): string {
  return s
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}
