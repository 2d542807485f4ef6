import assert from 'node:assert';
import type { FencingToken } from '@dlock/lock-api';

/** int8 arrives from pg as text: parsed here, at the repository edge, never through Number. */
export function tokenFromDb(text: string): FencingToken {
  assert.match(text, /^[1-9][0-9]{0,18}$/, 'database returned a non-canonical token');
  return BigInt(text);
}

export interface GrantRow {
  owner_id: string;
  session_id: string;
  fencing_token: string;
  acquired_at: Date;
  expires_at: Date;
}
