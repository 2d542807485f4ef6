import { canonicalUuid, DlockError, ValidationError } from '@dlock/lock-api';
import { isAccountId, isPayoutState, type PayoutState } from '@dlock/payout-contract';
import { decodeCursor, type Cursor } from '../payouts/domain/cursor.codec';

/** A malformed id names no payout: 404, the same as an unknown one. */
export function payoutIdParam(raw: string): string {
  const payoutId = canonicalUuid(raw);
  if (payoutId === undefined) {
    throw new DlockError('NOT_FOUND', 'no such payout', { details: { payoutId: raw } });
  }
  return payoutId;
}

export function accountIdParam(raw: string): string {
  if (!isAccountId(raw)) {
    throw new DlockError('NOT_FOUND', 'no such account', { details: { accountId: raw } });
  }
  return raw;
}

export const LIST_LIMIT_MAX = 500;
export const LIST_LIMIT_DEFAULT = 100;
const KNOWN = new Set(['state', 'accountId', 'limit', 'cursor']);

export interface ListQuery {
  state: PayoutState;
  accountId?: string;
  limit: number;
  after?: Cursor;
}

/** P1 query, parsed strictly: no coercion ("1e3", "10.0", " 5" are not limits), no repeats, no extras. */
export function parseListQuery(query: Record<string, unknown>): ListQuery {
  const fields: { field: string; message: string }[] = [];
  const single = (name: string): string | undefined => {
    const v = query[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') {
      fields.push({ field: name, message: 'must be given once, as a plain value' });
      return undefined;
    }
    return v;
  };
  for (const name of Object.keys(query)) {
    if (!KNOWN.has(name)) fields.push({ field: name, message: 'is not a known query parameter' });
  }
  const state = single('state');
  if (state === undefined && query.state === undefined) {
    fields.push({ field: 'state', message: 'is required (one of the eight payout states)' });
  } else if (state !== undefined && !isPayoutState(state)) {
    fields.push({ field: 'state', message: 'must be one of the eight payout states' });
  }
  const accountId = single('accountId');
  if (accountId !== undefined && !isAccountId(accountId)) {
    fields.push({ field: 'accountId', message: 'is not a valid account id' });
  }
  const limitText = single('limit');
  let limit = LIST_LIMIT_DEFAULT;
  if (limitText !== undefined) {
    if (!/^[1-9][0-9]{0,2}$/.test(limitText) || Number(limitText) > LIST_LIMIT_MAX) {
      fields.push({ field: 'limit', message: `must be an integer 1..${LIST_LIMIT_MAX}` });
    } else {
      limit = Number(limitText);
    }
  }
  const cursorText = single('cursor');
  let after: Cursor | undefined;
  if (cursorText !== undefined) {
    try {
      after = decodeCursor(cursorText);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      fields.push({ field: 'cursor', message: 'is not a cursor this service issued' });
    }
  }
  if (fields.length > 0) throw new ValidationError(fields);
  return { state: state as PayoutState, accountId, limit, after };
}
