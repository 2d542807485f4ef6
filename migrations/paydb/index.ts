import { PaydbSchema1767225600000 } from './1767225600000-paydb-schema';
import { ClearingShards1767312000000 } from './1767312000000-clearing-shards';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PAYDB_MIGRATIONS: Function[] = [PaydbSchema1767225600000, ClearingShards1767312000000];
