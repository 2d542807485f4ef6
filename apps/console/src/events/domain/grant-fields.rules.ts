/**
 * The fields of a safety event that name a grant: its fencing token (under
 * any of the names the services log it with) or its session id. A person
 * without `locks.read-grants` gets the event without them, as the lock-server
 * itself would show it (docs/console.md, "What a person sees").
 */
const GRANT_FIELDS: ReadonlySet<string> = new Set([
  'token',
  'fencingToken',
  'presentedToken',
  'highestToken',
  'revokedToken',
  'sessionId',
]);

/** `fields` without the grant's token and session id; the same object when it has neither. */
export function withoutGrantFields(fields: Record<string, unknown>): Record<string, unknown> {
  if (!Object.keys(fields).some((k) => GRANT_FIELDS.has(k))) return fields;
  return Object.fromEntries(Object.entries(fields).filter(([k]) => !GRANT_FIELDS.has(k)));
}
