import { PaydbSchema1767225600000 } from './1767225600000-paydb-schema';
import { ClearingShards1767312000000 } from './1767312000000-clearing-shards';
import { RecordsKeptRefDerived1796083200000 } from './1796083200000-records-kept-ref-derived';
import { RecordsChained1796169600000 } from './1796169600000-records-chained';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PAYDB_MIGRATIONS: Function[] = [
  PaydbSchema1767225600000,
  ClearingShards1767312000000,
  RecordsKeptRefDerived1796083200000,
  RecordsChained1796169600000,
];
