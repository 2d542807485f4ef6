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
export { FencePointModule } from './fence-point/fence-point.module';
export {
  FencePointService,
  type FloorRaised,
  type PresentedNotice,
} from './fence-point/fence-point.service';
export {
  FENCE_POINT_PATH,
  fencePointAnswer,
  parsePresentedNotice,
  type FencePointAnswer,
} from './fence-point/fence-point.controller';
export {
  FENCE_POINT_MODULE_OPTIONS,
  FenceFloors,
  type FenceFloorRaise,
  type FenceFloorResult,
  type FencePointEvents,
  type FencePointModuleOptions,
  type FencePointRoute,
  type FloorRaiseAudit,
  type NoticeRefusal,
} from './fence-point/fence-point.options';
export * from './safety-events/safety-events';
export * from './safety-events/safety-event-feed';
