import type {
  ReferenceObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';

/**
 * The OpenAPI building blocks every service's schemas are made of
 * (docs/contract.md): the payout services' wire schemas
 * (@dlock/payout-contract) and the lock-server's alike. No runtime imports,
 * so `@dlock/http-contract/schema` is light for a CLI that loads the wire
 * schemas but no HTTP server.
 */
/**
 * A property map keyed by a wire type, so a field added to or dropped from
 * the type without its schema breaks the build.
 */
export type WireProperties<T> = { [K in keyof T]-?: SchemaObject | ReferenceObject };

/** An object schema whose properties are exactly T's; the rest are required. */
export function objectSchema<T extends object>(
  properties: WireProperties<T>,
  optional: (keyof T & string)[] = [],
  description?: string,
): SchemaObject {
  const required = Object.keys(properties).filter((p) => !optional.includes(p as keyof T & string));
  const schema: SchemaObject = { type: 'object', properties, required };
  if (description !== undefined) schema.description = description;
  return schema;
}

/** An int64 as the wire carries it: a canonical decimal string, never a JSON number. */
export function int64Text(
  description: string,
  minimum: 0 | 1 = 1,
): { type: 'string'; pattern: string; description: string; example: string } {
  return {
    type: 'string',
    pattern: minimum === 1 ? '^[1-9][0-9]{0,18}$' : '^(0|[1-9][0-9]{0,18})$',
    description: `${description} (int64 as a decimal string, ${minimum}..9223372036854775807)`,
    example: minimum === 1 ? '9007199254740993' : '0',
  };
}

/** An instant: RFC 3339 UTC with milliseconds. */
export const INSTANT = {
  type: 'string',
  format: 'date-time',
  example: '2026-01-01T00:00:00.000Z',
} as const satisfies SchemaObject;

/** Money in minor units: a JSON integer, safe in every client. */
export const MINOR_AMOUNT = {
  type: 'integer',
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
} as const satisfies SchemaObject;

/** Named schemas referenced from decorators, added to each document that uses them. */
export const NAMED_SCHEMAS = new Map<string, SchemaObject>();

/**
 * Adds a library's named schemas (payout-contract's PAYOUT_WIRE_SCHEMAS) to those
 * documents reference by name: the library registers them, so this one need not know it.
 */
export function registerWireSchemas(schemas: Record<string, SchemaObject>): void {
  for (const [name, schema] of Object.entries(schemas)) NAMED_SCHEMAS.set(name, schema);
}
