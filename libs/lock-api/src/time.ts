/** RFC 3339 UTC with milliseconds, the only clock format on the wire (docs/contract.md). */
export function formatInstant(date: Date): string {
  return date.toISOString();
}

const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function parseInstant(text: string): Date {
  if (!RFC3339_MS.test(text))
    throw new RangeError(`not an RFC 3339 UTC millisecond instant: ${text}`);
  return new Date(text);
}
