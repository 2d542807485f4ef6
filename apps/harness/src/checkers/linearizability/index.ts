export {
  checkLockHistory,
  checkRecordedLockHistory,
  describeLinearizability,
  describeOp,
  linearizabilityLine,
  type LinearizabilityOptions,
  type LinearizabilityReport,
  type LinearizabilityViolation,
} from './linearizability.checker';
export { toLockOps, type LockAnswer, type LockOp, type LockOpKind } from './lock-op.model';
export { readLockHistory, writeLockHistory } from './lock-history.file';
