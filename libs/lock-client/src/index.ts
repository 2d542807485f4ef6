export { LockClient, type OpenSessionOptions } from './lock-client';
export { LockSession, type AcquireOptions, type SessionState } from './lock-session';
export { LockHandle, type HandleState, type RenewOptions } from './lock-handle';
export {
  CALL_BUDGETS,
  DEFAULT_LOCK_TTL_MS,
  DEFAULT_SAFETY_MARGIN,
  DEFAULT_SESSION_TTL_MS,
  HEARTBEAT_TRIES,
  type CallBudget,
  type LockClientEvents,
  type LockClientLogger,
  type LockClientOptions,
  type LossReason,
  type SessionLostFields,
} from './options';
export { ACQUIRE_RETRY_BUDGET, backoffDelayMs, classifyAcquireFailure } from './retry-policy';
export { LockServerUnavailableError, ProtocolError, type TransportPhase } from './errors';
export { monotonicClock, type Clock, type Timer } from './clock';
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
