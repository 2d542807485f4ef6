/**
 * The caller's remaining budget travels with every service-to-service call
 * (README "Wire conventions"): whole milliseconds the caller will still wait
 * for this answer. Absent = no caller budget; anything else that is not a
 * positive integer up to the maximum is 400 VALIDATION_FAILED. The sending
 * side lives here, free of dependencies, so the SDK can send it without Nest;
 * servers parse it in @dlock/http-contract.
 */
export const REQUEST_DEADLINE_HEADER = 'X-Request-Deadline-Ms';
/** One hour: far above any hop's wait here; larger values are refused, not clamped. */
export const REQUEST_DEADLINE_MAX_MS = 3_600_000;

/** What a caller sends: its read timeout (or less, if it has less left). */
export function requestDeadlineHeader(budgetMs: number): Record<string, string> {
  const ms = Math.min(REQUEST_DEADLINE_MAX_MS, Math.max(1, Math.floor(budgetMs)));
  return { [REQUEST_DEADLINE_HEADER.toLowerCase()]: String(ms) };
}
