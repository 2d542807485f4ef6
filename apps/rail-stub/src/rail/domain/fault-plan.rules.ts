import { mulberry32 } from '@dlock/prng';
/**
 * Decides the fate of each POST /submit: a seeded PRNG over the configured
 * rates, or an explicit script of fates queued by the harness. Pure logic, no
 * I/O, so a seed replays the same fault sequence (issue 5).
 */
export const FAILURE_MODES = ['mixed', 'error', 'reset', 'hold'] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];
export type FailureKind = Exclude<FailureMode, 'mixed'>;

/** Fates the harness can queue explicitly through POST /admin/faults `script`. */
export const SCRIPTED_FATES = [
  'ack',
  'ack-duplicate',
  'ack-malformed',
  'decline',
  'error',
  'error-accepted',
  'reset',
  'reset-accepted',
  'hold',
  'hold-accepted',
  'decline-accepted',
  'reject-400',
  'reject-400-accepted',
  'reject-409',
  'reject-409-accepted',
  'reject-429',
  'reject-429-accepted',
] as const;
export type ScriptedFate = (typeof SCRIPTED_FATES)[number];

export type Fate =
  /** Accepted and acknowledged; `duplicate` books a second transfer on the rail's own initiative. */
  | { kind: 'ack'; duplicate: boolean }
  /** Accepted, but the 200 carries no usable acknowledgement. */
  | { kind: 'ack-malformed' }
  /** Business decline (402): nothing moved. */
  | { kind: 'decline' }
  /** Injected failure; `accepted` says whether money moved before the caller lost sight of it. */
  | { kind: 'fail'; failure: FailureKind; accepted: boolean }
  /**
   * A 4xx answer (scripted only). `accepted`: the rail booked the transfer all the
   * same, which only its lookup (S2) reveals; the reconciler's rail sweep finds it.
   */
  | { kind: 'reject'; status: RejectStatus; accepted: boolean };

/** The 4xx answers a scripted rejection can carry: 402 is the business decline. */
export const REJECT_STATUSES = [400, 402, 409, 429] as const;
export type RejectStatus = (typeof REJECT_STATUSES)[number];

export interface FaultSettings {
  latencyMs: number;
  failureRate: number;
  failureMode: FailureMode;
  failureAcceptRate: number;
  holdMs: number;
  declineRate: number;
  duplicateAckRate: number;
  /** Share of calls answered after `slowLatencyMs` instead of `latencyMs` (docs/rail.md). */
  slowRate: number;
  slowLatencyMs: number;
}

/** One call as the plan decides it: its fate, and whether it is one of the slow ones. */
export interface PlannedCall {
  fate: Fate;
  slow: boolean;
}

const KINDS: readonly FailureKind[] = ['error', 'reset', 'hold'];
const SCRIPT_MAX = 10_000;
/**
 * Slowness is drawn from a second stream of the same seed, so adding it left
 * the five draws per call, and with them every seed's fate sequence, as they were.
 */
const SLOW_STREAM = 0x51_0e_d1_a7;

function slowStream(seed: number): () => number {
  return mulberry32((seed ^ SLOW_STREAM) >>> 0);
}

export function fateOf(scripted: ScriptedFate): Fate {
  switch (scripted) {
    case 'ack':
      return { kind: 'ack', duplicate: false };
    case 'ack-duplicate':
      return { kind: 'ack', duplicate: true };
    case 'ack-malformed':
      return { kind: 'ack-malformed' };
    case 'decline':
      return { kind: 'decline' };
    case 'error':
    case 'reset':
    case 'hold':
      return { kind: 'fail', failure: scripted, accepted: false };
    case 'error-accepted':
      return { kind: 'fail', failure: 'error', accepted: true };
    case 'reset-accepted':
      return { kind: 'fail', failure: 'reset', accepted: true };
    case 'hold-accepted':
      return { kind: 'fail', failure: 'hold', accepted: true };
    case 'decline-accepted':
      return { kind: 'reject', status: 402, accepted: true };
    case 'reject-400':
      return { kind: 'reject', status: 400, accepted: false };
    case 'reject-400-accepted':
      return { kind: 'reject', status: 400, accepted: true };
    case 'reject-409':
      return { kind: 'reject', status: 409, accepted: false };
    case 'reject-409-accepted':
      return { kind: 'reject', status: 409, accepted: true };
    case 'reject-429':
      return { kind: 'reject', status: 429, accepted: false };
    case 'reject-429-accepted':
      return { kind: 'reject', status: 429, accepted: true };
  }
}

export class FaultPlan {
  private random: () => number;
  private slowRandom: () => number;
  private queue: ScriptedFate[] = [];

  constructor(
    public settings: FaultSettings,
    private seedValue: number,
  ) {
    this.random = mulberry32(seedValue);
    this.slowRandom = slowStream(seedValue);
  }

  get seed(): number {
    return this.seedValue;
  }

  get script(): readonly ScriptedFate[] {
    return this.queue;
  }

  reseed(seed: number): void {
    this.seedValue = seed;
    this.random = mulberry32(seed);
    this.slowRandom = slowStream(seed);
  }

  setScript(fates: readonly ScriptedFate[]): void {
    if (fates.length > SCRIPT_MAX) throw new RangeError(`script longer than ${SCRIPT_MAX}`);
    this.queue = [...fates];
  }

  update(patch: Partial<FaultSettings>): void {
    this.settings = { ...this.settings, ...patch };
  }

  /**
   * Always draws the same number of values per call, so call N's fate and
   * slowness depend only on the seed and the rates, not on what earlier calls
   * turned out to be. A scripted call can be slow too: the script picks the
   * fate, the slow rate how long the answer takes.
   */
  next(): PlannedCall {
    const slow = this.slowRandom() < this.settings.slowRate;
    return { fate: this.nextFate(), slow };
  }

  private nextFate(): Fate {
    const [fail, kind, accept, decline, duplicate] = [
      this.random(),
      this.random(),
      this.random(),
      this.random(),
      this.random(),
    ];
    const scripted = this.queue.shift();
    if (scripted !== undefined) return fateOf(scripted);
    const s = this.settings;
    if (fail < s.failureRate) {
      const failure =
        s.failureMode === 'mixed'
          ? KINDS[Math.min(KINDS.length - 1, Math.floor(kind * KINDS.length))]
          : s.failureMode;
      return { kind: 'fail', failure, accepted: accept < s.failureAcceptRate };
    }
    if (decline < s.declineRate) return { kind: 'decline' };
    return { kind: 'ack', duplicate: duplicate < s.duplicateAckRate };
  }
}
