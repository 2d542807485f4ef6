/**
 * A UUID in its canonical text: lowercase hex, 8-4-4-4-12, as `randomUUID()` writes it. Ids this
 * system issued are compared in this form; one a caller sends is lowercased first
 * (`canonicalUuid`), so a malformed one is refused before it reaches a database.
 */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `raw` lowercased when it is a UUID in any case, else undefined. */
export function canonicalUuid(raw: string): string | undefined {
  const text = raw.toLowerCase();
  return UUID_PATTERN.test(text) ? text : undefined;
}
