import { ProxydbInit1767225600000 } from './1767225600000-proxydb-init';
import { RailAttemptsKept1796083200000 } from './1796083200000-rail-attempts-kept';
import { RailAttemptsChained1796313600000 } from './1796313600000-rail-attempts-chained';
import { ReconcilerReader1796486400000 } from './1796486400000-reconciler-reader';
import { HistoryBounded1796572800000 } from './1796572800000-history-bounded';
import { AdmissionAtOnce1796745600000 } from './1796745600000-admission-at-once';
import { GrantProofKept1796832000000 } from './1796832000000-grant-proof-kept';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PROXYDB_MIGRATIONS: Function[] = [
  ProxydbInit1767225600000,
  RailAttemptsKept1796083200000,
  RailAttemptsChained1796313600000,
  ReconcilerReader1796486400000,
  HistoryBounded1796572800000,
  AdmissionAtOnce1796745600000,
  GrantProofKept1796832000000,
];
