import { startTracing } from '@dlock/tracing';

// Imported first by main.ts: the instrumentations must patch http and express before they load.
startTracing('console');
