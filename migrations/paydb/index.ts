import { PaydbSchema1767225600000 } from './1767225600000-paydb-schema';
import { ClearingShards1767312000000 } from './1767312000000-clearing-shards';
import { RecordsKeptRefDerived1796083200000 } from './1796083200000-records-kept-ref-derived';
import { SweepIndex1796140800000 } from './1796140800000-sweep-index';
import { Intake1796227200000 } from './1796227200000-intake';
import { RecordsChained1796313600000 } from './1796313600000-records-chained';
import { ReconcilerReader1796486400000 } from './1796486400000-reconciler-reader';
import { HistoryBounded1796572800000 } from './1796572800000-history-bounded';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PAYDB_MIGRATIONS: Function[] = [
  PaydbSchema1767225600000,
  ClearingShards1767312000000,
  RecordsKeptRefDerived1796083200000,
  SweepIndex1796140800000,
  Intake1796227200000,
  RecordsChained1796313600000,
  ReconcilerReader1796486400000,
  HistoryBounded1796572800000,
];
