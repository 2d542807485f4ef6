import assert from 'node:assert/strict';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import {
  DlockError,
  ProofRejectedError,
  type NoticeExpectation,
  type RevocationNoticeClaims,
} from '@dlock/lock-api';
import { RevocationNotices } from '@dlock/identity';
import {
  FENCE_POINT_MODULE_OPTIONS,
  type FenceFloorRaise,
  type FenceFloors,
  type FencePointEvents,
  type FencePointModuleOptions,
} from './fence-point.options';
import { logLine } from '../nest-logger';

/** A revocation notice as presented, and who presented it. */
export interface PresentedNotice {
  notice: string | string[] | undefined;
  operator: string | null;
  reason: string | null;
}

export interface FloorRaised extends FenceFloorRaise {
  key: string;
  floor: bigint;
  claims: RevocationNoticeClaims;
}

/**
 * A fence point (docs/extending.md, "Fenced by a revoke"; docs/security.md,
 * "Revocation notices"): raises its memory of a lock key to a revocation's
 * floor, and only on a notice the lock-server signed over that key and
 * floor, so nobody's word sets a floor. The memory is the one the service's
 * fenced writes are checked against, so the revoked holder's next write is
 * refused from the moment this answers.
 */
@Injectable()
export class FencePointService implements OnModuleInit {
  private readonly notices: RevocationNotices;
  private readonly floors: FenceFloors[];
  private readonly events: FencePointEvents;

  constructor(@Inject(FENCE_POINT_MODULE_OPTIONS) options: FencePointModuleOptions) {
    const prefixes = options.floors.map((f) => f.prefix);
    assert.ok(prefixes.length > 0, 'a fence point serves at least one key prefix');
    assert.equal(new Set(prefixes).size, prefixes.length, 'one memory per key prefix');
    // The longest prefix first: `refund:eu:` wins over `refund:`.
    this.floors = [...options.floors].sort((a, b) => b.prefix.length - a.prefix.length);
    this.notices = new RevocationNotices(options.jwks);
    this.events = options.events ?? loggerEvents(new Logger('fence-point'));
  }

  onModuleInit(): Promise<void> {
    return this.notices.start();
  }

  /**
   * Checks the notice (and, when given, that it is for `expect`'s key, floor
   * and revocation), then raises the memory of its key to its floor.
   * PROOF_REJECTED (403) for a notice that is not genuine or not this one,
   * NOT_FOUND (404) for a key this fence point does not guard.
   */
  async raise(
    presented: PresentedNotice,
    expect: Partial<NoticeExpectation> = {},
  ): Promise<FloorRaised> {
    const claims = await this.verified(presented, expect);
    const floors = this.floors.find((f) => claims.key.startsWith(f.prefix));
    if (floors === undefined) {
      throw new DlockError('NOT_FOUND', 'this fence point guards no such lock key', {
        details: { key: claims.key },
      });
    }
    const floor = BigInt(claims.floor);
    const raised = await floors.raise(claims.key.slice(floors.prefix.length), floor);
    this.events.raised({
      key: claims.key,
      floor,
      ...raised,
      revocationId: claims.rid,
      requestedBy: claims.req,
      approvedBy: claims.apr,
      operator: presented.operator,
      reason: presented.reason,
    });
    return { ...raised, key: claims.key, floor, claims };
  }

  private async verified(
    presented: PresentedNotice,
    expect: Partial<NoticeExpectation>,
  ): Promise<RevocationNoticeClaims> {
    try {
      return await this.notices.verify(presented.notice, expect);
    } catch (err) {
      if (err instanceof ProofRejectedError) {
        this.events.refused({
          reason: err.reason,
          key: expect.key ?? null,
          operator: presented.operator,
        });
      }
      throw err;
    }
  }
}

/** One line per raise or refusal, as the lock client's (./nest-logger.ts): `event name=value …`. */
function loggerEvents(logger: Logger): FencePointEvents {
  return {
    raised: (a) => {
      const { result, ...fields } = a;
      if (result === 'raised') logger.warn(logLine('fence_floor_raised', fields));
      else logger.log(logLine(`fence_floor_unchanged result=${result}`, fields));
    },
    refused: (r) => logger.warn(logLine('proof_rejected proof=revocation', { ...r })),
  };
}
