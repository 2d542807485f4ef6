import { randomUUID } from 'node:crypto';
import { canonicalUuid, UUID_PATTERN } from './uuid';

describe('canonicalUuid', () => {
  it('gives a UUID in any case back lowercased, the form ids are stored and compared in', () => {
    const id = randomUUID();
    expect(canonicalUuid(id)).toBe(id);
    expect(canonicalUuid(id.toUpperCase())).toBe(id);
    expect(UUID_PATTERN.test(id.toUpperCase())).toBe(false);
  });

  it.each([
    ['not a UUID', 'not-a-uuid'],
    ['36 hyphens', '-'.repeat(36)],
    ['hex without hyphens', 'a'.repeat(36)],
    ['one digit short', '3f1d2c4b-0000-4000-8000-00000000000'],
    ['a trailing newline', '3f1d2c4b-0000-4000-8000-000000000000\n'],
    ['a non-hex digit', '3f1d2c4b-0000-4000-8000-00000000000g'],
  ])('refuses %s', (_name, raw) => {
    expect(canonicalUuid(raw)).toBeUndefined();
  });
});
