import { LockSchema1764400000000 } from './1764400000000-lock-schema';
import { RevocationsKept1796083200000 } from './1796083200000-revocations-kept';
import { RevocationsChained1796313600000 } from './1796313600000-revocations-chained';
import { RevocationRequests1796400000000 } from './1796400000000-revocation-requests';
import { ReconcilerReader1796486400000 } from './1796486400000-reconciler-reader';
import { HistoryBounded1796572800000 } from './1796572800000-history-bounded';
import { SessionStates1796662800000 } from './1796662800000-session-states';

// Listed explicitly, never globbed, so the build and the TypeORM CLI see the same set.
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const LOCKDB_MIGRATIONS: Function[] = [
  LockSchema1764400000000,
  RevocationsKept1796083200000,
  RevocationsChained1796313600000,
  RevocationRequests1796400000000,
  ReconcilerReader1796486400000,
  HistoryBounded1796572800000,
  SessionStates1796662800000,
];
