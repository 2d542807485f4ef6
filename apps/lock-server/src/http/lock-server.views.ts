import {
  formatFencingToken,
  formatInstant,
  LOCK_KEY_PATTERN,
  type LockGrantDto,
  type LockInfo,
  type HeldLockDto,
  type LiveSessionDto,
  type LockListDto,
  type SessionListDto,
} from '@dlock/lock-api';
import { INSTANT, int64Text, objectSchema, wireSchema } from '@dlock/http-contract';
import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { Revoked, SignedGrant } from '../locks/service/lock.service';
import type { HeartbeatResult, OpenedSession } from '../locks/domain/lock.types';
import type { RevocationRequest } from '../locks/domain/revocation.types';

/** Wire shapes of docs/lock-server.md: tokens as decimal strings, instants RFC 3339 UTC ms. */
export function grantView({ grant, proof }: SignedGrant): LockGrantDto {
  return {
    key: grant.key,
    ownerId: grant.ownerId,
    sessionId: grant.sessionId,
    fencingToken: formatFencingToken(grant.fencingToken),
    acquiredAt: formatInstant(grant.acquiredAt),
    expiresAt: formatInstant(grant.expiresAt),
    grantProof: proof,
  };
}

export function sessionView(session: OpenedSession) {
  return {
    sessionId: session.sessionId,
    ownerId: session.ownerId,
    ttlMillis: session.ttlMillis,
    expiresAt: formatInstant(session.expiresAt),
  };
}

export function heartbeatView(beat: HeartbeatResult) {
  return {
    sessionId: beat.sessionId,
    expiresAt: formatInstant(beat.expiresAt),
    serverTime: formatInstant(beat.serverTime),
    heldLockCount: beat.heldLockCount,
  };
}

export function lockInfoView(info: LockInfo) {
  if (!info.held) return { key: info.key, held: false, waiterCount: info.waiterCount };
  return {
    key: info.key,
    held: true,
    ownerId: info.ownerId,
    fencingToken:
      info.fencingToken === undefined ? undefined : formatFencingToken(info.fencingToken),
    acquiredAt: info.acquiredAt && formatInstant(info.acquiredAt),
    expiresAt: info.expiresAt && formatInstant(info.expiresAt),
    waiterCount: info.waiterCount,
  };
}

export function outcomeView(outcome: Revoked) {
  return {
    revokedToken: formatFencingToken(outcome.revokedToken),
    newTokenFloor: formatFencingToken(outcome.newTokenFloor),
    revocationId: outcome.revocationId,
    ...(outcome.guards === undefined ? {} : { guards: outcome.guards }),
  };
}

/** 202 of a two-person revoke: what was asked, by whom, and until when a second operator may approve. */
export function revocationRequestView(r: RevocationRequest) {
  return {
    requestId: r.requestId,
    key: r.key,
    status: 'PENDING_APPROVAL',
    operator: r.operator,
    reason: r.reason,
    requestedBy: r.requestedBy,
    requestedAt: formatInstant(r.requestedAt),
    expiresAt: formatInstant(r.expiresAt),
  };
}

// The same shapes for the OpenAPI document (docs/openapi/lock-server.json).

const OWNER = { type: 'string', maxLength: 64 } as const;
const UUID = { type: 'string', format: 'uuid' } as const;

export const LOCK_GRANT_SCHEMA = wireSchema<LockGrantDto>(
  'LockGrant',
  {
    key: { type: 'string', pattern: LOCK_KEY_PATTERN.source },
    ownerId: OWNER,
    sessionId: UUID,
    fencingToken: int64Text('the grant’s fencing token; renew never changes it'),
    acquiredAt: INSTANT,
    expiresAt: INSTANT,
    grantProof: {
      type: 'string',
      description:
        'The lock-server’s signature over key, token, owner, session and issue time: send it ' +
        'as X-Grant-Proof with every fenced write and the release (docs/security.md)',
    },
  },
  [],
  'L4/L5: the grant; the token orders it after every earlier grant',
);

export const SESSION_SCHEMA = wireSchema<ReturnType<typeof sessionView>>('Session', {
  sessionId: UUID,
  ownerId: OWNER,
  ttlMillis: { type: 'integer', description: 'granted TTL (may be clamped down)' },
  expiresAt: INSTANT,
});

export const HEARTBEAT_SCHEMA = wireSchema<ReturnType<typeof heartbeatView>>('Heartbeat', {
  sessionId: UUID,
  expiresAt: INSTANT,
  serverTime: INSTANT,
  heldLockCount: { type: 'integer', minimum: 0 },
});

export const LOCK_INFO_SCHEMA = wireSchema<LockInfo>(
  'LockInfo',
  {
    key: { type: 'string' },
    held: { type: 'boolean' },
    ownerId: OWNER,
    fencingToken: int64Text('the live grant’s token'),
    acquiredAt: INSTANT,
    expiresAt: INSTANT,
    waiterCount: { type: 'integer', minimum: 0 },
  },
  ['ownerId', 'fencingToken', 'acquiredAt', 'expiresAt'],
  'L7: advisory only; the holder fields are present while held',
);

const GUARD_FLOOR: SchemaObject = {
  type: 'string',
  enum: ['raised', 'unchanged', 'not_found', 'failed'],
};

/** Which fence points hold the new floor when the revoke answers (keys some fence point guards). */
const GUARDS: SchemaObject = {
  type: 'object',
  description:
    'Present when a fence point (FENCE_POINTS) guards the key: what each of the key’s prefix ' +
    'did with the new floor before the answer, by its configured name (the demo system: ' +
    '`payment-resource`, `rail-proxy`); `failed` is left to that fence point’s own catch-up ' +
    '(for payout keys the reconciler, docs/security.md)',
  additionalProperties: GUARD_FLOOR,
};

export const REVOKE_OUTCOME_SCHEMA = wireSchema<ReturnType<typeof outcomeView>>(
  'RevokeOutcome',
  {
    revokedToken: int64Text('the evicted grant’s token'),
    newTokenFloor: int64Text('every later grant of this key exceeds it'),
    revocationId: UUID,
    guards: GUARDS,
  },
  ['guards'],
);

export const REVOKE_APPROVAL_SCHEMA = wireSchema<
  ReturnType<typeof outcomeView> & { requestId: string }
>(
  'RevokeApproval',
  {
    revokedToken: int64Text('the evicted grant’s token'),
    newTokenFloor: int64Text('every later grant of this key exceeds it'),
    revocationId: UUID,
    requestId: UUID,
    guards: GUARDS,
  },
  ['guards'],
);

export const REVOCATION_REQUEST_SCHEMA = wireSchema<ReturnType<typeof revocationRequestView>>(
  'RevocationRequest',
  {
    requestId: UUID,
    key: { type: 'string', pattern: LOCK_KEY_PATTERN.source },
    status: { type: 'string', enum: ['PENDING_APPROVAL'] },
    operator: { type: 'string' },
    reason: { type: 'string' },
    requestedBy: { type: 'string', description: 'the requesting operator’s identity' },
    requestedAt: INSTANT,
    expiresAt: INSTANT,
  },
);

const TRUNCATED = { type: 'boolean', description: 'more exist than `limit`' } as const;

export const LOCK_LIST_SCHEMA = wireSchema<LockListDto>('LockList', {
  locks: {
    type: 'array',
    items: objectSchema<HeldLockDto>({
      key: { type: 'string', pattern: LOCK_KEY_PATTERN.source },
      ownerId: OWNER,
      sessionId: UUID,
      token: int64Text('the live grant’s token'),
      leaseRemainingMillis: { type: 'integer', minimum: 0 },
    }),
  },
  truncated: TRUNCATED,
});

export const SESSION_LIST_SCHEMA = wireSchema<SessionListDto>('SessionList', {
  sessions: {
    type: 'array',
    items: objectSchema<LiveSessionDto>({
      sessionId: UUID,
      ownerId: OWNER,
      state: {
        type: 'string',
        enum: ['ACTIVE', 'SUSPECT'],
        description:
          'SUSPECT once under half the TTL is left (a heartbeat is overdue); docs/lock-server.md, "Session states"',
      },
      ttlMillis: { type: 'integer', minimum: 1 },
      ttlRemainingMillis: {
        type: 'integer',
        minimum: 0,
        description: 'the last heartbeat was ttlMillis − ttlRemainingMillis ago',
      },
      locksHeld: { type: 'integer', minimum: 0 },
    }),
  },
  truncated: TRUNCATED,
});
