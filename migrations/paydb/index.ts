import { PaydbSchema1767225600000 } from './1767225600000-paydb-schema';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PAYDB_MIGRATIONS: Function[] = [PaydbSchema1767225600000];
