import assert from 'node:assert/strict';

/**
 * The operations a route may name with `@Operation` and a policy may grant
 * (docs/security.md, "Authorisation policy"). A policy naming anything else is
 * refused at boot, so a typo cannot silently grant nothing (or everything).
 *
 * This library knows only the lock service's operations and those every
 * service serves; an app registers its own with {@link registerOperations}
 * when its module is loaded, before any policy is read (docs/extending.md,
 * "Your own operations"). A policy file names the operations of every service
 * that reads it, so each of those services registers them all.
 */
export const BUILT_IN_OPERATIONS = [
  // the lock-server
  'sessions.open',
  'sessions.heartbeat',
  'sessions.close',
  'sessions.list',
  'locks.acquire',
  'locks.renew',
  'locks.release',
  'locks.inspect',
  'locks.list',
  // Not a route: sees the token and session id of another identity's live grant (L7, listings).
  'locks.read-grants',
  'locks.revoke',
  'revocations.approve',
  'revocations.list',
  // every service
  'safety-events.read',
  'debug.spans',
  // Sending X-Acting-For: acting for a signed-in person (the console, docs/security.md).
  'identity.act-for',
] as const;

/** `<area>.<verb>`, lower case: what a policy file can spell. */
const OPERATION_NAME = /^[a-z][a-z0-9-]*\.[a-z][a-z0-9-]*$/;

export type OperationName = string;

const known = new Set<string>(BUILT_IN_OPERATIONS);

/** Adds an app's operations to those a policy and a route may name; registering twice is harmless. */
export function registerOperations(names: readonly string[]): void {
  for (const name of names) {
    assert.match(name, OPERATION_NAME, `operation ${JSON.stringify(name)} is not <area>.<verb>`);
    known.add(name);
  }
}

/** Every operation known so far: the built-in ones and every app's registered ones. */
export function knownOperations(): readonly string[] {
  return [...known];
}

export function isOperationName(value: unknown): value is OperationName {
  return typeof value === 'string' && known.has(value);
}

/** Fails loudly for an operation nobody registered: a route naming it could never be granted. */
export function assertOperation(name: string): void {
  assert.ok(
    known.has(name),
    `operation ${name} was never registered: the app registers its operations (registerOperations) before it serves`,
  );
}
