/** Where the harness may make a worker SIGKILL itself (DLOCK_HARNESS=1 only). */
export const CRASH_POINTS = [
  'after-claim',
  'after-submitted',
  'after-submit',
  'after-ack',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];
