export { LockClientModule } from './lock-client.module';
export {
  LOCK_CLIENT_EVENTS,
  LOCK_CLIENT_MODULE_OPTIONS,
  type LockClientModuleOptions,
} from './lock-client.options';
export { LockSessionKeeper, type WithLockOptions } from './lock-session.keeper';
export { LockSessionHealthIndicator } from './lock-session.health';
export { nestLockClientLogger } from './nest-logger';
export { DlockExceptionFilter, dlockErrorResponse, traceIdOf } from './dlock-exception.filter';
