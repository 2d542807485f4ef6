import { performance } from 'node:perf_hooks';
import { http, sleep, type HttpResult } from '@dlock/testing';
import { HistoryRecorder } from '../support/history-checker';

/**
 * A closed-loop acquire/release workload on ONE key over real HTTP, recording
 * the grant history (for the mutual-exclusion checker) and every non-2xx
 * answer other than plain contention, with when it happened.
 */
export interface WorkloadError {
  at: number;
  op: 'acquire' | 'release' | 'heartbeat';
  status: number;
  code: string;
  body: unknown;
}

export interface Workload {
  history: HistoryRecorder;
  errors: WorkloadError[];
  sessions: string[];
  /** Every successful acquire: when its request was sent and when the grant arrived. */
  grants: Array<{ sentAt: number; grantedAt: number }>;
  /** The first grant whose request was sent after `t`, minus `t` (null if none). */
  recoveryAfter(t: number): number | null;
  stop(): Promise<void>;
}

/** Bounded per-request wait: a hung lock-server call is itself a finding. */
const REQUEST_TIMEOUT_MS = 5_000;
const RELEASE_RETRIES_MAX = 20;

async function call(
  method: string,
  url: string,
  options: Parameters<typeof http>[2],
): Promise<HttpResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<HttpResult>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({ status: 0, headers: new Headers(), body: { code: 'CLIENT_TIMEOUT' }, text: '' }),
      REQUEST_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([http(method, url, options), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export async function startWorkload(
  url: string,
  opts: { key: string; workers: number; sessionTtlMs: number; lockTtlMs: number },
): Promise<Workload> {
  const history = new HistoryRecorder();
  const errors: WorkloadError[] = [];
  const grants: Workload['grants'] = [];
  let running = true;
  const sessions: string[] = [];
  for (let i = 0; i < opts.workers; i++) {
    const res = await call('POST', `${url}/v1/sessions`, {
      body: { ownerId: `w${i}`, ttlMillis: opts.sessionTtlMs },
    });
    if (res.status !== 201) throw new Error(`open session: ${res.status} ${res.text}`);
    sessions.push(res.body.sessionId as string);
  }
  const fail = (op: WorkloadError['op'], res: HttpResult) =>
    errors.push({
      at: performance.now(),
      op,
      status: res.status,
      code: String((res.body as { code?: unknown })?.code),
      body: res.body,
    });

  const worker = async (i: number) => {
    const owner = `w${i}`;
    const sessionId = sessions[i];
    const headers = { 'x-owner-id': owner };
    while (running) {
      const acquireSentAt = performance.now();
      const res = await call('POST', `${url}/v1/locks/${opts.key}/acquire`, {
        headers,
        body: { sessionId, ttlMillis: opts.lockTtlMs },
      });
      if (res.status === 200) {
        const record = history.granted(opts.key, owner, res.body.fencingToken as string);
        grants.push({ sentAt: acquireSentAt, grantedAt: record.grantedAt });
        await sleep(2);
        let unsure = false;
        for (let attempt = 0; attempt < RELEASE_RETRIES_MAX; attempt++) {
          const sentAt = performance.now();
          const rel = await call('DELETE', `${url}/v1/locks/${opts.key}?sessionId=${sessionId}`, {
            headers: { ...headers, 'x-fencing-token': res.body.fencingToken as string },
          });
          if (rel.status === 204) {
            history.released(record, sentAt);
            break;
          }
          // After an unanswered release, LOCK_LOST means the first one landed.
          if (rel.status === 409 && unsure && rel.body?.code === 'LOCK_LOST') break;
          fail('release', rel);
          if (rel.status !== 503) break;
          unsure = true;
          await sleep(50);
        }
      } else if (res.status === 409 && res.body?.code === 'LOCK_CONTENDED') {
        // Long enough that a dozen contenders do not starve the holder's release of CPU on a
        // loaded machine, short enough that the lock rarely sits free.
        await sleep(5 + Math.random() * 15);
      } else {
        fail('acquire', res);
        await sleep(20);
      }
    }
  };
  const heartbeats = async (i: number) => {
    while (running) {
      await sleep(400);
      const res = await call('POST', `${url}/v1/sessions/${sessions[i]}/heartbeat`, {
        headers: { 'x-owner-id': `w${i}` },
      });
      if (res.status !== 200) fail('heartbeat', res);
    }
  };
  const loops = sessions.flatMap((_, i) => [worker(i), heartbeats(i)]);
  return {
    history,
    errors,
    sessions,
    grants,
    recoveryAfter(t) {
      const first = grants.find((g) => g.sentAt > t);
      return first ? first.grantedAt - t : null;
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
