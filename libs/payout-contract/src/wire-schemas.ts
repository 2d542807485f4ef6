import type {
  ReferenceObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import {
  INSTANT,
  MINOR_AMOUNT,
  int64Text,
  objectSchema,
  registerWireSchemas,
  type WireProperties,
} from '@dlock/http-contract/schema';
import { ACCOUNT_ID_PATTERN } from './payout-protocol';
import { PAYOUT_STATES, RAIL_OUTCOMES } from './payout-types';
import type * as Wire from './wire';

/**
 * The wire types of wire.ts as OpenAPI schemas (docs/openapi/). Each property
 * map is keyed by its wire type, so a field added to or dropped from a type
 * without its schema breaks the build.
 */

const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: SchemaObject): SchemaObject => ({ ...schema, nullable: true });
const STRING = { type: 'string' } as const;
const UUID = { type: 'string', format: 'uuid' } as const;
const INTEGER = { type: 'integer' } as const;
const BALANCE = { type: 'integer', description: 'minor units' } as const;
const ACCOUNT_ID = { type: 'string', pattern: ACCOUNT_ID_PATTERN.source } as const;
const CURRENCY = { type: 'string', pattern: '^[A-Z]{3}$', example: 'EUR' } as const;
/** What a payout was created as: the order every view of one starts with. */
const ORDER = {
  payoutId: UUID,
  accountId: ACCOUNT_ID,
  amountMinor: MINOR_AMOUNT,
  currency: CURRENCY,
  beneficiaryRef: STRING,
} as const;
/** Created-to-POSTED latency percentiles of PayoutStats, `over` some payouts. */
const latency = (over: string): SchemaObject => ({
  type: 'object',
  description: `created to POSTED ${over}; percentiles null when count is 0`,
  properties: {
    p50: nullable({ type: 'number' }),
    p90: nullable({ type: 'number' }),
    p99: nullable({ type: 'number' }),
    count: INTEGER,
  },
  required: ['p50', 'p90', 'p99', 'count'],
});
const STATE: SchemaObject = { type: 'string', enum: [...PAYOUT_STATES] };
const RAIL_OUTCOME_KIND: SchemaObject = {
  type: 'string',
  enum: ['SUBMITTED', 'ACKED', 'REJECTED', 'AMBIGUOUS'],
};
const FENCE = int64Text('the account fence', 0);
const RECEIPT = {
  type: 'string',
  description: 'the rail-proxy’s signed rail receipt (compact JWS, docs/rail.md “Receipts”)',
} as const;

const transition: WireProperties<Wire.TransitionView> = {
  payoutId: UUID,
  state: STATE,
  previousState: STATE,
  submissionId: nullable(UUID),
  railReference: nullable(STRING),
  tokenStamp: nullable(int64Text('token of the write that last moved the payout')),
  accountFence: FENCE,
};

/** Named schemas of the payment-resource's and rail-proxy's answers. */
export const PAYOUT_WIRE_SCHEMAS = {
  PayoutSummary: objectSchema<Wire.PayoutSummary>({
    ...ORDER,
    state: STATE,
    attemptCount: INTEGER,
    createdAt: INSTANT,
  }),
  PayoutPage: objectSchema<Wire.PayoutPage>(
    {
      items: { type: 'array', items: ref('PayoutSummary') },
      nextCursor: { type: 'string', description: 'opaque; present when more items follow' },
    },
    ['nextCursor'],
  ),
  PayoutRailRecord: objectSchema<Wire.PayoutRailRecord>({
    submissionId: nullable(UUID),
    outcome: STRING,
    railReference: nullable(STRING),
    fencingToken: nullable(int64Text('token of the recorded write')),
    ownerId: STRING,
    recordedAt: INSTANT,
  }),
  PayoutDetail: objectSchema<Wire.PayoutDetail>(
    {
      ...ORDER,
      clientRef: STRING,
      state: STATE,
      attemptCount: INTEGER,
      claimedBy: nullable(STRING),
      tokenStamp: nullable(int64Text('token of the write that last moved the payout')),
      submissionId: nullable(UUID),
      railReference: nullable(STRING),
      failureReason: nullable(STRING),
      createdAt: INSTANT,
      claimedAt: nullable(INSTANT),
      submittedAt: nullable(INSTANT),
      ambiguousAt: nullable(INSTANT),
      settledAt: nullable(INSTANT),
      updatedAt: INSTANT,
      submissions: { type: 'array', items: ref('PayoutRailRecord') },
    },
    [],
    'Advisory: picks the next write, never decides safety',
  ),
  AccountView: objectSchema<Wire.AccountView>({
    accountId: ACCOUNT_ID,
    kind: STRING,
    currency: CURRENCY,
    balanceMinor: BALANCE,
    fence: FENCE,
    version: INTEGER,
    updatedAt: INSTANT,
    ledgerSumMinor: { ...BALANCE, description: 'the ledger recomputed; equals balanceMinor' },
  }),
  CreatedAccount: objectSchema<Wire.CreatedAccount>({
    accountId: ACCOUNT_ID,
    kind: { type: 'string', enum: ['CUSTOMER'] },
    currency: CURRENCY,
    balanceMinor: BALANCE,
    fence: FENCE,
  }),
  DepositResponse: objectSchema<Wire.DepositResponse>({
    depositId: UUID,
    accountId: ACCOUNT_ID,
    amountMinor: MINOR_AMOUNT,
    currency: CURRENCY,
    balanceMinor: BALANCE,
  }),
  CreatedPayout: objectSchema<Wire.CreatedPayout>({
    ...ORDER,
    clientRef: STRING,
    state: { type: 'string', enum: ['PENDING'] },
  }),
  ClaimResponse: objectSchema<Wire.ClaimResponse>({
    payoutId: UUID,
    state: STATE,
    claimToken: int64Text('the token the payout was claimed with'),
    accountFence: FENCE,
    attemptCount: INTEGER,
    idempotencyKey: STRING,
  }),
  LedgerEntry: objectSchema<Wire.LedgerEntryView>({
    entryId: UUID,
    accountId: ACCOUNT_ID,
    direction: { type: 'string', enum: ['DEBIT', 'CREDIT'] },
    amountMinor: MINOR_AMOUNT,
    fence: int64Text('the token the entry was written under'),
  }),
  PostResponse: objectSchema<Wire.PostResponse>({
    payoutId: UUID,
    state: STATE,
    entries: { type: 'array', items: ref('LedgerEntry'), minItems: 2, maxItems: 2 },
    balanceMinor: BALANCE,
  }),
  RailOutcomeResponse: objectSchema<Wire.RailOutcomeResponse>(
    {
      ...transition,
      outcome: RAIL_OUTCOME_KIND,
      railInstruction: {
        type: 'string',
        description:
          'SUBMITTED only: the signed instruction to send as X-Payout-Instruction with the ' +
          'submission (docs/rail.md)',
      },
    },
    ['railInstruction'],
  ),
  AbandonResponse: objectSchema<Wire.AbandonResponse>({
    payoutId: UUID,
    state: STATE,
    previousState: STATE,
    operator: STRING,
    reason: STRING,
    abandonedAt: nullable(INSTANT),
  }),
  ResolveResponse: objectSchema<Wire.ResolveResponse>({
    ...transition,
    resolution: { type: 'string', enum: ['ACKED', 'NOT_FOUND'] },
  }),
  AccountFloorResponse: objectSchema<Wire.AccountFloorResponse>({
    accountId: ACCOUNT_ID,
    floor: int64Text('the floor asked for'),
    fenceBefore: FENCE,
    fenceAfter: FENCE,
    raised: { type: 'boolean', description: 'false when the fence was already at or past it' },
  }),
  HighWaterFloorResponse: objectSchema<Wire.HighWaterFloorResponse>({
    accountId: ACCOUNT_ID,
    floor: int64Text('the floor asked for'),
    highestTokenBefore: nullable(int64Text('the mark before')),
    highestTokenAfter: int64Text('the mark after'),
    raised: { type: 'boolean', description: 'false when the mark was already at or past it' },
  }),
  SubmitResponse: objectSchema<Wire.SubmitResponse>({
    submissionId: UUID,
    payoutId: UUID,
    presentedToken: int64Text('the token the submission was admitted with'),
    outcome: { type: 'string', enum: ['ACKED'] },
    railReference: STRING,
    submittedAt: INSTANT,
    resolvedAt: INSTANT,
    railReceipt: RECEIPT,
  }),
  Submission: objectSchema<Wire.SubmissionView>({
    submissionId: UUID,
    payoutId: UUID,
    accountId: ACCOUNT_ID,
    presentedToken: int64Text('the token presented'),
    ownerId: STRING,
    clientRef: STRING,
    amountMinor: MINOR_AMOUNT,
    currency: CURRENCY,
    outcome: {
      ...nullable({ type: 'string', enum: [...RAIL_OUTCOMES] }),
      description: 'null = unresolved: money may have moved',
    },
    railReference: nullable(STRING),
    errorCode: nullable(STRING),
    submittedAt: INSTANT,
    resolvedAt: nullable(INSTANT),
    railReceipt: nullable(RECEIPT),
  }),
  SubmissionsResponse: objectSchema<Wire.SubmissionsResponse>({
    payoutId: UUID,
    submissions: { type: 'array', items: ref('Submission') },
  }),
  RailTransfer: objectSchema<Wire.RailTransfer>({
    railReference: STRING,
    clientRef: STRING,
    amountMinor: MINOR_AMOUNT,
    currency: CURRENCY,
    acceptedAt: INSTANT,
    settled: { type: 'boolean' },
    settledAt: nullable(INSTANT),
    duplicateOf: nullable(STRING),
  }),
  RailLookup: objectSchema<Wire.RailLookup>({
    clientRef: STRING,
    asOf: INSTANT,
    settlementWindowMs: nullable(INTEGER),
    transfers: { type: 'array', items: ref('RailTransfer') },
  }),
  RailEvidence: objectSchema<Wire.RailEvidence>({
    payoutId: UUID,
    lookup: ref('RailLookup'),
    railReceipt: nullable(RECEIPT),
  }),
  AccountList: objectSchema<Wire.AccountList>({
    accounts: {
      type: 'array',
      items: objectSchema<Wire.AccountListItem>({
        accountId: ACCOUNT_ID,
        currency: CURRENCY,
        balanceMinor: BALANCE,
        fence: FENCE,
      }),
    },
    truncated: { type: 'boolean', description: 'more accounts exist than `limit`' },
  }),
  PayoutStats: objectSchema<Wire.PayoutStats>({
    windowSeconds: INTEGER,
    byState: {
      type: 'object',
      description: 'every payout by state; each of the eight states present',
      properties: Object.fromEntries(PAYOUT_STATES.map((s) => [s, INTEGER])),
    },
    postedPerBucket: {
      type: 'array',
      items: {
        type: 'object',
        properties: { at: INSTANT, count: INTEGER },
        required: ['at', 'count'],
      },
    },
    bucketSeconds: INTEGER,
    latencyMillis: latency('over the window'),
    latencyMillisAllTime: latency('over every POSTED payout'),
  }),
  HighWaterList: objectSchema<Wire.HighWaterList>({
    accounts: {
      type: 'array',
      items: objectSchema<Wire.HighWaterItem>({
        accountId: ACCOUNT_ID,
        highWater: int64Text('the highest token the proxy admitted for the account', 0),
      }),
    },
    truncated: { type: 'boolean', description: 'more accounts exist than `limit`' },
  }),
} satisfies Record<string, SchemaObject>;

export type PayoutWireSchemaName = keyof typeof PAYOUT_WIRE_SCHEMAS;

// Every document that references one of them by name carries it (http-contract's openapi.ts).
registerWireSchemas(PAYOUT_WIRE_SCHEMAS);

/**
 * A reference to one of these schemas, for a route's OpenAPI decorator. Using it (not
 * http-contract's schemaRef) loads this file, so the schema is registered even in an app
 * that otherwise imports only payout-contract's types (the rail stub).
 */
export function payoutSchemaRef(name: PayoutWireSchemaName): ReferenceObject {
  return ref(name);
}
