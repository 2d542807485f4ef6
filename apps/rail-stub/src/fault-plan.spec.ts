import { FaultPlan, fateOf, SCRIPTED_FATES, type Fate, type FaultSettings } from './fault-plan';

const settings: FaultSettings = {
  latencyMs: 0,
  failureRate: 0.3,
  failureMode: 'mixed',
  failureAcceptRate: 0.5,
  holdMs: 1000,
  declineRate: 0.2,
  duplicateAckRate: 0.1,
};

function run(plan: FaultPlan, n: number): Fate[] {
  return Array.from({ length: n }, () => plan.next());
}

describe('FaultPlan', () => {
  it('replays the same fate sequence for the same seed', () => {
    expect(run(new FaultPlan(settings, 42), 200)).toEqual(run(new FaultPlan(settings, 42), 200));
    expect(run(new FaultPlan(settings, 42), 50)).not.toEqual(run(new FaultPlan(settings, 43), 50));
  });

  it('reseeding restarts the sequence', () => {
    const plan = new FaultPlan(settings, 7);
    const first = run(plan, 30);
    plan.reseed(7);
    expect(run(plan, 30)).toEqual(first);
  });

  it('honours the configured rates roughly', () => {
    const fates = run(new FaultPlan(settings, 1), 20_000);
    const share = (p: (f: Fate) => boolean) => fates.filter(p).length / fates.length;
    expect(share((f) => f.kind === 'fail')).toBeCloseTo(0.3, 1);
    expect(share((f) => f.kind === 'decline')).toBeCloseTo(0.7 * 0.2, 1);
    expect(share((f) => f.kind === 'ack' && f.duplicate)).toBeCloseTo(0.7 * 0.8 * 0.1, 1);
    for (const failure of ['error', 'reset', 'hold'] as const) {
      expect(share((f) => f.kind === 'fail' && f.failure === failure)).toBeCloseTo(0.1, 1);
    }
  });

  it('with all rates zero every call is a plain ack', () => {
    const quiet = { ...settings, failureRate: 0, declineRate: 0, duplicateAckRate: 0 };
    expect(run(new FaultPlan(quiet, 3), 100)).toEqual(
      Array.from({ length: 100 }, () => ({ kind: 'ack', duplicate: false })),
    );
  });

  it('a script overrides the rates, in order, then the rates resume', () => {
    const plan = new FaultPlan({ ...settings, failureRate: 0, declineRate: 0 }, 9);
    plan.setScript(['hold-accepted', 'decline', 'ack-malformed']);
    expect(run(plan, 4)).toEqual([
      { kind: 'fail', failure: 'hold', accepted: true },
      { kind: 'decline' },
      { kind: 'ack-malformed' },
      { kind: 'ack', duplicate: expect.any(Boolean) },
    ]);
    expect(plan.script).toEqual([]);
  });

  it('a script does not shift the seeded sequence of later calls', () => {
    const scripted = new FaultPlan(settings, 11);
    scripted.setScript(['ack', 'ack']);
    const plain = new FaultPlan(settings, 11);
    expect(run(scripted, 10).slice(2)).toEqual(run(plain, 10).slice(2));
  });

  it('scripted 4xx fates carry their status and whether the rail booked anyway', () => {
    expect(fateOf('decline-accepted')).toEqual({ kind: 'reject', status: 402, accepted: true });
    expect(fateOf('reject-400')).toEqual({ kind: 'reject', status: 400, accepted: false });
    expect(fateOf('reject-409-accepted')).toEqual({ kind: 'reject', status: 409, accepted: true });
    expect(fateOf('reject-429')).toEqual({ kind: 'reject', status: 429, accepted: false });
  });

  it('maps every scripted fate', () => {
    for (const name of SCRIPTED_FATES) expect(fateOf(name).kind).toBeDefined();
  });
});
