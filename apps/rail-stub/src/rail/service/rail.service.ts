import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { counter } from '@dlock/metrics';
import type { Counter } from 'prom-client';
import { formatInstant } from '@dlock/lock-api';
import type { RailLookup } from '@dlock/payout-contract';
import { RAIL_STUB_CONFIG, type RailStubConfig } from '../../config';
import type { TransferRequest } from '../domain/transfer-request.types';
import {
  FaultPlan,
  type Fate,
  type FaultSettings,
  type RejectStatus,
  type ScriptedFate,
} from '../domain/fault-plan.rules';
import { Journal, type TransferRecord } from '../persistence/journal.repository';

/** What the controller must do with the connection once the fate has played out. */
export type SubmitReply =
  | { kind: 'ack'; body: { railReference: string; acceptedAt: string } }
  | { kind: 'malformed' }
  | { kind: 'decline' }
  /** A scripted 4xx: the status and its JSON body. */
  | { kind: 'reject'; status: RejectStatus; body: { status: string; clientRef: string } }
  | { kind: 'error' }
  | { kind: 'reset' }
  /** Connection already dropped (held) or the service is shutting down. */
  | { kind: 'gone' };

export interface StubStats {
  submitsReceived: number;
  transfersAccepted: number;
  acked: number;
  declined: number;
  malformedAcks: number;
  duplicateAcks: number;
  failures: { error: number; reset: number; hold: number };
  failuresAccepted: number;
  /** Scripted 4xx answers, and how many of them booked the transfer all the same. */
  rejected: number;
  rejectsAccepted: number;
  /** Calls answered after the slow latency (a held call never is). */
  slowCalls: number;
  journalTransfers: number;
  startedAt: string;
}

function submitCounter(): Counter<'fate'> {
  return counter({
    name: 'rail_stub_submit_total',
    help: 'POST /submit calls by injected fate',
    labelNames: ['fate'],
  });
}

function fateLabel(fate: Fate): string {
  switch (fate.kind) {
    case 'ack':
      return fate.duplicate ? 'ack_duplicate' : 'ack';
    case 'ack-malformed':
      return 'ack_malformed';
    case 'decline':
      return 'decline';
    case 'fail':
      return `${fate.failure}${fate.accepted ? '_accepted' : ''}`;
    case 'reject':
      return `reject_${fate.status}${fate.accepted ? '_accepted' : ''}`;
  }
}

/** Whether the fate moves money, whatever the caller then hears. */
function books(fate: Fate): boolean {
  switch (fate.kind) {
    case 'ack':
    case 'ack-malformed':
      return true;
    case 'decline':
      return false;
    case 'fail':
    case 'reject':
      return fate.accepted;
  }
}

export const REJECT_WORDS: Record<RejectStatus, string> = {
  400: 'INVALID',
  402: 'DECLINED',
  409: 'CONFLICT',
  429: 'RATE_LIMITED',
};

/**
 * The hostile rail (docs/rail.md, FR-21): every call is a fresh transfer, nothing
 * is deduplicated, and injected faults may hide whether money moved. It knows
 * nothing about tokens, locks or payouts.
 */
@Injectable()
export class RailStubService implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('rail-stub');
  private readonly plan: FaultPlan;
  private readonly journal: Journal;
  private readonly shutdown = new AbortController();
  private readonly held = new Set<Socket>();
  private readonly submits = submitCounter();
  private readonly stats: Omit<StubStats, 'journalTransfers'>;

  constructor(@Inject(RAIL_STUB_CONFIG) private readonly config: RailStubConfig) {
    this.plan = new FaultPlan(
      {
        latencyMs: config.RAIL_STUB_LATENCY_MS,
        failureRate: config.RAIL_STUB_FAILURE_RATE,
        failureMode: config.RAIL_STUB_FAILURE_MODE,
        failureAcceptRate: config.RAIL_STUB_FAILURE_ACCEPT_RATE,
        holdMs: config.RAIL_STUB_HOLD_MS,
        declineRate: config.RAIL_STUB_DECLINE_RATE,
        duplicateAckRate: config.RAIL_STUB_DUPLICATE_ACK_RATE,
        slowRate: config.RAIL_STUB_SLOW_RATE,
        slowLatencyMs: config.RAIL_STUB_SLOW_LATENCY_MS,
      },
      config.RAIL_STUB_SEED,
    );
    this.journal = Journal.open(config.RAIL_STUB_JOURNAL_PATH, config.RAIL_STUB_JOURNAL_FSYNC);
    if (this.journal.skippedLines > 0) {
      this.logger.warn(
        { skippedLines: this.journal.skippedLines },
        'journal had unreadable lines (torn write?)',
      );
    }
    this.stats = {
      submitsReceived: 0,
      transfersAccepted: 0,
      acked: 0,
      declined: 0,
      malformedAcks: 0,
      duplicateAcks: 0,
      failures: { error: 0, reset: 0, hold: 0 },
      failuresAccepted: 0,
      rejected: 0,
      rejectsAccepted: 0,
      slowCalls: 0,
      startedAt: formatInstant(new Date()),
    };
  }

  /**
   * Money moves at receipt: an accepted transfer is journaled before any delay
   * or injected failure, so a caller that times out may well have paid.
   */
  async submit(body: TransferRequest, socket: Socket): Promise<SubmitReply> {
    this.stats.submitsReceived++;
    const { fate, slow } = this.plan.next();
    this.submits.inc({ fate: fateLabel(fate) });
    const first = books(fate) ? this.accept(body) : undefined;
    if (first && fate.kind === 'ack' && fate.duplicate) {
      this.accept(body, first.railReference);
      this.stats.duplicateAcks++;
    }
    this.logger.log({ clientRef: body.clientRef, fate: fateLabel(fate) }, 'submit');

    if (fate.kind === 'fail') {
      this.stats.failures[fate.failure]++;
      if (fate.accepted) this.stats.failuresAccepted++;
      if (fate.failure === 'hold') {
        await this.hold(socket, this.plan.settings.holdMs);
        return { kind: 'gone' };
      }
    }
    const settings = this.plan.settings;
    if (slow) this.stats.slowCalls++;
    await this.sleep(slow ? settings.slowLatencyMs : settings.latencyMs);
    if (this.shutdown.signal.aborted || socket.destroyed) return { kind: 'gone' };
    switch (fate.kind) {
      case 'ack':
        this.stats.acked++;
        return {
          kind: 'ack',
          body: { railReference: first!.railReference, acceptedAt: first!.acceptedAt },
        };
      case 'ack-malformed':
        this.stats.malformedAcks++;
        return { kind: 'malformed' };
      case 'decline':
        this.stats.declined++;
        return { kind: 'decline' };
      case 'fail':
        return { kind: fate.failure === 'reset' ? 'reset' : 'error' };
      case 'reject':
        this.stats.rejected++;
        if (fate.accepted) this.stats.rejectsAccepted++;
        return {
          kind: 'reject',
          status: fate.status,
          body: { status: REJECT_WORDS[fate.status], clientRef: body.clientRef },
        };
    }
  }

  /** S2: every transfer booked under the reference, with its settlement state. */
  lookup(clientRef: string, now = new Date()): RailLookup {
    const windowMs = this.config.RAIL_STUB_SETTLEMENT_WINDOW_MS;
    return {
      clientRef,
      asOf: formatInstant(now),
      settlementWindowMs: windowMs,
      transfers: this.journal.lookup(clientRef).map((t) => {
        const settledAtMs = Date.parse(t.acceptedAt) + windowMs;
        const settled = now.getTime() >= settledAtMs;
        return {
          railReference: t.railReference,
          clientRef: t.clientRef,
          amountMinor: t.amountMinor,
          currency: t.currency,
          acceptedAt: t.acceptedAt,
          settled,
          settledAt: settled ? formatInstant(new Date(settledAtMs)) : null,
          duplicateOf: t.duplicateOf ?? null,
        };
      }),
    };
  }

  faults(): FaultSettings & { seed: number; script: readonly ScriptedFate[] } {
    return { ...this.plan.settings, seed: this.plan.seed, script: [...this.plan.script] };
  }

  updateFaults(
    patch: Partial<FaultSettings> & { seed?: number; script?: ScriptedFate[] },
  ): ReturnType<RailStubService['faults']> {
    const { seed, script, ...settings } = patch;
    const defined = Object.fromEntries(
      Object.entries(settings).filter(([, v]) => v !== undefined),
    ) as Partial<FaultSettings>;
    this.plan.update(defined);
    if (seed !== undefined) this.plan.reseed(seed);
    if (script !== undefined) this.plan.setScript(script);
    this.logger.log({ faults: this.faults() }, 'fault settings changed');
    return this.faults();
  }

  statsSnapshot(): StubStats {
    return {
      ...this.stats,
      failures: { ...this.stats.failures },
      journalTransfers: this.journal.size,
    };
  }

  beforeApplicationShutdown(): void {
    this.shutdown.abort();
    for (const socket of this.held) socket.destroy();
    this.held.clear();
  }

  onApplicationShutdown(): void {
    this.journal.close();
  }

  private accept(body: TransferRequest, duplicateOf?: string): TransferRecord {
    const record: TransferRecord = {
      railReference: `rr-${randomUUID()}`,
      clientRef: body.clientRef,
      amountMinor: body.amountMinor,
      currency: body.currency,
      acceptedAt: formatInstant(new Date()),
      ...(duplicateOf ? { duplicateOf } : {}),
    };
    this.journal.append(record);
    this.stats.transfersAccepted++;
    return record;
  }

  /** Keeps the connection open, answering nothing, then drops it. */
  private async hold(socket: Socket, holdMs: number): Promise<void> {
    this.held.add(socket);
    try {
      await this.sleep(holdMs);
    } finally {
      this.held.delete(socket);
      socket.destroy();
    }
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0 || this.shutdown.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const signal = this.shutdown.signal;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
