import {
  FaultPlan,
  fateOf,
  SCRIPTED_FATES,
  type Fate,
  type FaultSettings,
} from './fault-plan.rules';

const settings: FaultSettings = {
  latencyMs: 0,
  failureRate: 0.3,
  failureMode: 'mixed',
  failureAcceptRate: 0.5,
  holdMs: 1000,
  declineRate: 0.2,
  duplicateAckRate: 0.1,
  slowRate: 0,
  slowLatencyMs: 5000,
};

function run(plan: FaultPlan, n: number): Fate[] {
  return Array.from({ length: n }, () => plan.next().fate);
}

function slowness(plan: FaultPlan, n: number): boolean[] {
  return Array.from({ length: n }, () => plan.next().slow);
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

  it('seed 42 still gives the fates it gave before slow calls existed', () => {
    const ack = { kind: 'ack', duplicate: false };
    const fail = (failure: string, accepted: boolean) => ({ kind: 'fail', failure, accepted });
    const decline = { kind: 'decline' };
    const expected = [ack, ack, fail('hold', false), decline, decline, fail('error', false)];
    expected.push(fail('hold', true), ack, fail('reset', true), ack, fail('reset', false));
    expected.push(fail('hold', true));
    for (const slowRate of [0, 0.5, 1]) {
      expect(run(new FaultPlan({ ...settings, slowRate }, 42), 12)).toEqual(expected);
    }
  });

  it('with the slow rate at 0 no call is slow', () => {
    expect(slowness(new FaultPlan(settings, 5), 1000)).not.toContain(true);
  });

  it('makes the configured share of calls slow, the same calls for the same seed', () => {
    const slow = { ...settings, slowRate: 0.25 };
    const first = slowness(new FaultPlan(slow, 77), 20_000);
    expect(first.filter(Boolean).length / first.length).toBeCloseTo(0.25, 1);
    expect(slowness(new FaultPlan(slow, 77), 20_000)).toEqual(first);
    expect(slowness(new FaultPlan(slow, 78), 200)).not.toEqual(first.slice(0, 200));
    const plan = new FaultPlan(slow, 77);
    slowness(plan, 50);
    plan.reseed(77);
    expect(slowness(plan, 200)).toEqual(first.slice(0, 200));
  });

  it('a scripted call is slow or not by the slow rate; every call is slow at rate 1', () => {
    const plan = new FaultPlan({ ...settings, slowRate: 1 }, 9);
    plan.setScript(['decline']);
    expect(plan.next()).toEqual({ fate: { kind: 'decline' }, slow: true });
    expect(slowness(plan, 100)).not.toContain(false);
  });

  it('maps every scripted fate', () => {
    for (const name of SCRIPTED_FATES) expect(fateOf(name).kind).toBeDefined();
  });
});
