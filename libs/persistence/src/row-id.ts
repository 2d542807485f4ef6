import { randomUUID } from 'node:crypto';

/** Where rowId takes its clock and its random bits. */
export interface RowIdSource {
  nowMs(): number;
  /** A version 4 UUID's text: its last 19 characters are used. */
  uuid(): string;
}

const PROCESS_SOURCE: RowIdSource = { nowMs: () => Date.now(), uuid: () => randomUUID() };
let source = PROCESS_SOURCE;

/**
 * The deterministic simulation supplies its virtual clock and seeded bits, so
 * a replay makes the same ids (docs/harness.md, "Deterministic simulation");
 * null restores the process's own.
 */
export function useRowIdSource(next: RowIdSource | null): void {
  source = next ?? PROCESS_SOURCE;
}

/**
 * A new row's id: a time-ordered UUID (version 7, RFC 9562), 48 bits of Unix
 * milliseconds followed by random bits. Keys made now sort after the keys of
 * history, so an insert lands at the right edge of each b-tree index on them
 * and touches the same few pages however many rows lie to its left; a random
 * (version 4) key lands anywhere, and every page of the index becomes part of
 * the working set (docs/scale.md, "Row ids").
 */
export function rowId(nowMs: number = source.nowMs()): string {
  // randomUUID draws from node's entropy cache: its last 19 characters are the random
  // bits and the RFC variant; the time and the version replace its first 15.
  const random = source.uuid();
  const time = nowMs.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
}
