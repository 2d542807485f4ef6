/**
 * The SQLSTATE of a failed statement (`23505`, `57014`, …), from a pg error
 * or the TypeORM QueryFailedError wrapping one; undefined for anything else.
 */
export function sqlState(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; driverError?: { code?: unknown } };
  const code = e.driverError?.code ?? e.code;
  return typeof code === 'string' ? code : undefined;
}
