import { Inject, Injectable, Logger } from '@nestjs/common';
import { SafetyEvents } from '@dlock/observability';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../../config';
import type { ReadOnlyDb } from '../../persistence/read-only-db.gateway';
import { PAYDB, PROXYDB } from '../../persistence/databases.types';
import { ReconcilerMetrics } from '../../reconciler.metrics';
import { LockSessionKeeper } from '@dlock/lock-nest';

export type ProbeResult = 'ok' | 'behind' | 'contended';

interface GuardHigh {
  guard: 'account' | 'rail';
  accountId: string;
  value: bigint;
}

/**
 * Is the token source behind the guards? (docs/operations.md, "Token source
 * behind the guards"). A rewound lockdb (restore from an old backup, a
 * sequence reset) mints tokens the guards already passed: every holder is
 * then fenced out, or worse, a reused token meets a guard that forgot it.
 * Each pass reads the highest value either guard holds, THEN takes a fresh
 * grant of a dedicated probe key: a healthy source mints it above every
 * token issued before, so above everything a guard held at the read. A probe
 * token at or below that value is `token_regression` (guard `lock_source`).
 */
@Injectable()
export class TokenSourceCheck {
  private readonly logger = new Logger('token-source');

  constructor(
    @Inject(RECONCILER_CONFIG) private readonly config: ReconcilerConfig,
    @Inject(PAYDB) private readonly paydb: ReadOnlyDb,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
    private readonly sessions: LockSessionKeeper,
    private readonly metrics: ReconcilerMetrics,
    private readonly safety: SafetyEvents,
  ) {
    safety.watchesRegression('lock_source');
  }

  async probe(signal: AbortSignal): Promise<ProbeResult> {
    // Read first: a value read before the grant was minted before it.
    const highs = await this.guardHighs(signal);
    const session = await this.sessions.session(signal);
    const handle = await session.tryAcquire(this.config.RECONCILER_TOKEN_PROBE_KEY, { signal });
    if (handle === null) {
      // Another reconciler replica is probing right now; its pass judges.
      this.metrics.tokenProbeTotal.inc({ result: 'contended' });
      return 'contended';
    }
    const probeToken = handle.fencingToken;
    await handle.release();
    const top = highs.reduce<GuardHigh | null>(
      (a, b) => (a === null || b.value > a.value ? b : a),
      null,
    );
    const behind = top !== null && probeToken <= top.value;
    this.metrics.tokenSourceBehind.set(behind ? 1 : 0);
    this.metrics.tokenProbeTotal.inc({ result: behind ? 'behind' : 'ok' });
    if (!behind) return 'ok';
    this.safety.tokenRegression({
      guard: 'lock_source',
      probeKey: this.config.RECONCILER_TOKEN_PROBE_KEY,
      probeToken: probeToken.toString(),
      highestGuard: top.guard,
      highestAccountId: top.accountId,
      highestToken: top.value.toString(),
      source: 'reconciler',
    });
    this.logger.error(
      {
        event: 'token_source_behind',
        probeToken: probeToken.toString(),
        highestToken: top.value.toString(),
      },
      'the lock token source mints tokens the guards already passed (see docs/operations.md)',
    );
    return 'behind';
  }

  private async guardHighs(signal: AbortSignal): Promise<GuardHigh[]> {
    const [fences, marks] = await Promise.all([
      this.paydb.query<{ account_id: string; value: string }>(
        `SELECT account_id, fence::text AS value FROM account ORDER BY fence DESC LIMIT 1`,
        [],
        signal,
      ),
      this.proxydb.query<{ account_id: string; value: string }>(
        `SELECT account_id, highest_token::text AS value FROM rail_high_water
          ORDER BY highest_token DESC LIMIT 1`,
        [],
        signal,
      ),
    ]);
    return [
      ...fences.map((r) => ({
        guard: 'account' as const,
        accountId: r.account_id,
        value: BigInt(r.value),
      })),
      ...marks.map((r) => ({
        guard: 'rail' as const,
        accountId: r.account_id,
        value: BigInt(r.value),
      })),
    ];
  }
}
