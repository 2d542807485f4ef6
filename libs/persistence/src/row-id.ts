import { randomUUID } from 'node:crypto';

/**
 * A new row's id: a time-ordered UUID (version 7, RFC 9562), 48 bits of Unix
 * milliseconds followed by random bits. Keys made now sort after the keys of
 * history, so an insert lands at the right edge of each b-tree index on them
 * and touches the same few pages however many rows lie to its left; a random
 * (version 4) key lands anywhere, and every page of the index becomes part of
 * the working set (docs/scale.md, "Row ids").
 */
export function rowId(nowMs: number = Date.now()): string {
  // randomUUID draws from node's entropy cache: its last 19 characters are the random
  // bits and the RFC variant; the time and the version replace its first 15.
  const random = randomUUID();
  const time = nowMs.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
}
