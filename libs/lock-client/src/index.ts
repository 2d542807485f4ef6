// What an application needs: the client, its session and handle, their
// options, and the typed errors to catch. Budgets, retry policy and clock
// internals stay inside the package (they are contract numbers, not knobs).
export { LockClient, type OpenSessionOptions } from './lock-client';
export { LockSession, type AcquireOptions, type SessionState } from './lock-session';
export { LockHandle, type HandleState, type LeaseVerdict, type RenewOptions } from './lock-handle';
export {
  type LockClientEvents,
  type LockClientLogger,
  type LockClientOptions,
  type LossReason,
  type SessionLostFields,
} from './options';
export { LockServerUnavailableError, ProtocolError, type TransportPhase } from './errors';
export type { Clock, Timer } from './clock';
export {
  nodeHttpTransport,
  type Transport,
  type WireRequest,
  type WireResponse,
} from './transport';
// The typed errors callers catch live in the API library; re-exported for one import line.
export {
  ContentionError,
  DlockError,
  FencedOutError,
  LockLostError,
  SessionLostError,
  type FencingToken,
} from '@dlock/lock-api';
export { LockServerReadClient } from './lock-server-reads';
