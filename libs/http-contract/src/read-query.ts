import { ValidationError, type ValidationFailure } from '@dlock/lock-api';

/** An integer query parameter: its inclusive range and the value taken when it is absent. */
export interface IntQueryParam {
  min: number;
  max: number;
  default: number;
}

/** Canonical non-negative decimals only: "1e3", "10.0", " 5", "+5" and "007" are not numbers here. */
const CANONICAL_INT = /^(0|[1-9][0-9]{0,15})$/;

/**
 * The query of a list read (`?limit=`, `?after=`, `?windowSeconds=`), parsed
 * without coercion: an unknown or repeated parameter, a non-canonical number
 * or one out of range is 400 VALIDATION_FAILED naming every bad field.
 */
export function parseIntQuery<K extends string>(
  query: Record<string, unknown>,
  params: Record<K, IntQueryParam>,
): Record<K, number> {
  const fields: ValidationFailure[] = [];
  for (const name of Object.keys(query)) {
    if (!Object.hasOwn(params, name)) {
      fields.push({ field: name, message: 'is not a known query parameter' });
    }
  }
  const out = {} as Record<K, number>;
  for (const name of Object.keys(params) as K[]) {
    const spec = params[name];
    const raw = query[name];
    out[name] = spec.default;
    if (raw === undefined) continue;
    const value = typeof raw === 'string' && CANONICAL_INT.test(raw) ? Number(raw) : NaN;
    if (!(value >= spec.min && value <= spec.max)) {
      fields.push({
        field: name,
        message: `must be given once, as an integer ${spec.min}..${spec.max}`,
      });
    } else out[name] = value;
  }
  if (fields.length > 0) throw new ValidationError(fields);
  return out;
}

/** Most list reads: `limit` 1..500, 100 when absent (the P1 page size). */
export const READ_LIMIT: IntQueryParam = { min: 1, max: 500, default: 100 };
