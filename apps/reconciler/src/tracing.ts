import { startTracing } from '@dlock/tracing';

// Imported first by main.ts: the instrumentations must patch http, express and pg before they load.
startTracing('reconciler');
