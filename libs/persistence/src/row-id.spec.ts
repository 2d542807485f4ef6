import { isUUID } from 'class-validator';
import { rowId } from './row-id';

describe('rowId', () => {
  it('is a version 7 UUID with the RFC variant, accepted where the contract takes a uuid', () => {
    const id = rowId();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(isUUID(id)).toBe(true);
  });

  it('carries its millisecond in its first 48 bits', () => {
    const ms = Date.UTC(2026, 11, 2, 20, 13, 0, 123);
    expect(parseInt(rowId(ms).replace('-', '').slice(0, 12), 16)).toBe(ms);
  });

  it('sorts by time across milliseconds, as PostgreSQL compares uuids (bytewise)', () => {
    const at = Date.UTC(2026, 0, 1);
    const ids = [at + 1, at, at + 1_000, at + 2].map((ms) => rowId(ms));
    expect([...ids].sort()).toEqual([ids[1], ids[0], ids[3], ids[2]]);
  });

  it('differs between two ids of the same millisecond', () => {
    const ms = Date.now();
    const ids = new Set(Array.from({ length: 1_000 }, () => rowId(ms)));
    expect(ids.size).toBe(1_000);
  });
});
