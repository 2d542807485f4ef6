import { errorCodeSpec, type ErrorCode } from '@dlock/lock-api';
import type { Clock, Timer } from './clock';
import { LockServerUnavailableError, type TransportPhase } from './errors';
import type { Transport, WireRequest, WireResponse } from './transport';

/** Test double: time moves only when the test says so. */
export class FakeClock implements Clock {
  private now = 0;
  private seq = 0;
  private timers = new Map<number, { atMs: number; fn: () => void }>();

  nowMs(): number {
    return this.now;
  }

  setTimer(fn: () => void, delayMs: number): Timer {
    const id = ++this.seq;
    this.timers.set(id, { atMs: this.now + Math.max(0, delayMs), fn });
    return { cancel: () => void this.timers.delete(id) };
  }

  /** Moves time without running timers: a blocked event loop, a late timer. */
  jump(ms: number): void {
    this.now += ms;
  }

  /** Moves time to now + ms, running every due timer in order and letting promises settle. */
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    for (;;) {
      await flush();
      const next = this.nextTimer();
      if (!next || next[1].atMs > target) break;
      this.timers.delete(next[0]);
      this.now = Math.max(this.now, next[1].atMs);
      next[1].fn();
    }
    this.now = target;
    await flush();
  }

  /** Runs timers until `promise` settles (bounded), returning its outcome. */
  async settle<T>(promise: Promise<T>, maxSteps = 1_000): Promise<T> {
    let done = false;
    const watched = promise.finally(() => {
      done = true;
    });
    watched.catch(() => undefined);
    for (let i = 0; i < maxSteps && !done; i++) {
      await flush();
      if (done) break;
      const next = this.nextTimer();
      if (!next) break;
      await this.advance(Math.max(0, next[1].atMs - this.now));
    }
    return watched;
  }

  pendingTimers(): number {
    return this.timers.size;
  }

  private nextTimer(): [number, { atMs: number; fn: () => void }] | undefined {
    let best: [number, { atMs: number; fn: () => void }] | undefined;
    for (const entry of this.timers) if (!best || entry[1].atMs < best[1].atMs) best = entry;
    return best;
  }
}

export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export interface RecordedRequest extends WireRequest {
  path: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test double: bodies are inspected ad hoc
  json?: any;
  sentAtMs: number;
}

export type FakeReply = WireResponse | Error | Promise<WireResponse>;

/** A scripted lock-server: `reply` decides each answer; every request is recorded. */
export function fakeTransport(
  clock: Clock,
  reply: (req: RecordedRequest) => FakeReply,
): Transport & { requests: RecordedRequest[] } {
  const requests: RecordedRequest[] = [];
  const transport = (async (req: WireRequest) => {
    const recorded: RecordedRequest = {
      ...req,
      path: `${req.method} ${req.url.pathname}`,
      json: req.body === undefined ? undefined : JSON.parse(req.body),
      sentAtMs: clock.nowMs(),
    };
    requests.push(recorded);
    const answer = reply(recorded);
    if (answer instanceof Error) throw answer;
    return answer;
  }) as Transport & { requests: RecordedRequest[] };
  transport.requests = requests;
  return transport;
}

export function ok(status: number, body?: unknown): WireResponse {
  return { status, text: body === undefined ? '' : JSON.stringify(body) };
}

export function envelope(
  code: ErrorCode,
  extra: { retryAfterMillis?: number; details?: Record<string, unknown> } = {},
): WireResponse {
  const { httpStatus, retrySafe } = errorCodeSpec(code);
  return ok(httpStatus, { code, message: code, retrySafe, ...extra, traceId: 'a'.repeat(32) });
}

export function unreachable(phase: TransportPhase = 'connect'): LockServerUnavailableError {
  return new LockServerUnavailableError(phase, `fake ${phase} failure`);
}

/** An ISO instant `ms` after a fixed server epoch (server clocks are only ever subtracted). */
export function serverAt(ms: number): string {
  return new Date(Date.UTC(2030, 0, 1) + ms).toISOString();
}

/** The session id the scripted lock-servers of the SDK's specs hand out. */
export const SID = '5b0e1d0c-3f0a-4f5e-9a39-0c8a4b9f2e11';

export type Route = 'open' | 'heartbeat' | 'close' | 'acquire' | 'renew' | 'release';

/** Which lock-server call a recorded request is. */
export function route(req: RecordedRequest): Route {
  if (req.path === 'POST /v1/sessions') return 'open';
  if (req.path.endsWith('/heartbeat')) return 'heartbeat';
  if (req.path.startsWith('DELETE /v1/sessions/')) return 'close';
  if (req.path.endsWith('/acquire')) return 'acquire';
  if (req.path.endsWith('/renew')) return 'renew';
  return 'release';
}
