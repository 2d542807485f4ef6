import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { HOP_BUDGETS, JsonPeer, withHopRetries } from '@dlock/http-client';
import { fileTokenProvider } from '@dlock/identity';
import { formatFencingToken, type LockOutcome } from '@dlock/lock-api';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../../config';
import type { FencePointConfig } from '../config/fence-points.config';

/** What a fence point did with a revocation's floor; `failed` is left to its own catch-up. */
export type GuardFloor = 'raised' | 'unchanged' | 'not_found' | 'failed';
/** By fence point name (FENCE_POINTS), only the fence points of the key's prefix. */
export type GuardFloors = Record<string, GuardFloor>;

/** The longest a revoke waits for its fence points before it answers with what it knows. */
export const FLOOR_RAISE_BUDGET_MS = 2_000;
const ANSWERS: ReadonlySet<string> = new Set(['raised', 'unchanged', 'not_found']);

interface FencePoint {
  config: FencePointConfig;
  peer: JsonPeer;
  path: string;
}

/**
 * Revocation fencing at revoke time (docs/security.md, "Revocation
 * notices"): a revoke presents the notice it signed over the new floor at
 * every fence point configured for the key's prefix (FENCE_POINTS), all at
 * once, before it answers, so the revoked holder's next write is refused
 * there at once. One generic contract (`POST {url}` with `{ notice, reason }`,
 * docs/contract.md, "Fence points"): this service knows no resource behind a
 * key. The answer says what each did; one that did not answer is `failed`.
 */
@Injectable()
export class FencePoints implements OnModuleDestroy {
  private readonly logger = new Logger('fence-points');
  private readonly points: FencePoint[];

  constructor(@Inject(LOCK_SERVER_CONFIG) config: LockServerConfig) {
    this.points = config.fencePoints.map((point) => {
      const url = new URL(point.url);
      const token =
        point.audience === undefined || config.AUTH_TOKEN_DIR === undefined
          ? undefined
          : fileTokenProvider(config.AUTH_TOKEN_DIR, point.audience);
      return {
        config: point,
        peer: new JsonPeer(point.name, url.origin, { token }),
        path: url.pathname + url.search,
      };
    });
  }

  /** What each fence point of the key's prefix did; undefined when none guards the key. */
  async raise(
    key: string,
    outcome: LockOutcome,
    notice: string,
    by: string,
  ): Promise<GuardFloors | undefined> {
    const matching = this.points.filter((p) => key.startsWith(p.config.prefix));
    if (matching.length === 0) return undefined;
    const body = {
      notice,
      reason: `lock ${key} revoked by ${by} (token ${formatFencingToken(outcome.revokedToken)})`,
    };
    const signal = AbortSignal.timeout(FLOOR_RAISE_BUDGET_MS);
    const answers = await Promise.all(
      matching.map((p) => this.present(p, body, signal).catch((err) => this.failed(p, key, err))),
    );
    return Object.fromEntries(matching.map((p, i) => [p.config.name, answers[i]]));
  }

  onModuleDestroy(): void {
    for (const p of this.points) p.peer.close();
  }

  /** One presentation; idempotent at the fence point, so transient failures are retried. */
  private async present(
    point: FencePoint,
    body: { notice: string; reason: string },
    signal: AbortSignal,
  ): Promise<GuardFloor> {
    const answer = await withHopRetries<{ result?: unknown }>(
      'idempotentWrite',
      () =>
        point.peer.call({
          method: 'POST',
          path: point.path,
          headers: { 'x-operator': 'lock-server' },
          body,
          budget: HOP_BUDGETS.fencedWrite,
          signal,
        }),
      signal,
    );
    const result = answer?.result;
    if (typeof result !== 'string' || !ANSWERS.has(result)) {
      throw new Error(`answered no result (${JSON.stringify(result)})`);
    }
    return result as GuardFloor;
  }

  private failed(point: FencePoint, key: string, err: unknown): 'failed' {
    this.logger.warn(
      {
        event: 'revocation_floor_pending',
        guard: point.config.name,
        key,
        err: (err as Error).message,
      },
      'fence point not raised at revoke time; its own catch-up must raise it',
    );
    return 'failed';
  }
}
