export {
  checkLockHistory,
  checkRecordedLockHistory,
  describeLinearizability,
  describeOp,
  linearizabilityLine,
  type LinearizabilityOptions,
  type LinearizabilityReport,
  type LinearizabilityViolation,
} from './check';
export { toLockOps, type LockAnswer, type LockOp, type LockOpKind } from './ops';
export { readLockHistory, writeLockHistory } from './history-file';
