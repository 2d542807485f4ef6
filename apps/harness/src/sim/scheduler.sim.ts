import { abortReason } from '@dlock/http-client';
import type { Clock, Timer } from '@dlock/lock-client';

/** The wall-clock instant virtual time 0 stands for (2026-01-01T00:00:00Z): fixed, so replays match. */
export const SIM_EPOCH_MS = 1_767_225_600_000;

interface SimEvent {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** Lets every promise continuation queued so far run (the microtask queue drains before it). */
const drainMicrotasks = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The simulation's only scheduler (docs/harness.md, "Deterministic
 * simulation"): virtual time, one queue of events ordered by (time, order of
 * scheduling). After each event every promise continuation it caused runs
 * before the next event, so a run is a function of its seed alone.
 */
export class SimScheduler {
  private nowValue = 0;
  private seq = 0;
  private readonly heap: SimEvent[] = [];
  events = 0;

  get now(): number {
    return this.nowValue;
  }

  /** Runs `fn` `delayMs` of virtual time from now; answers a cancel function. */
  schedule(delayMs: number, fn: () => void): () => void {
    const ev: SimEvent = {
      at: this.nowValue + Math.max(0, delayMs),
      seq: this.seq++,
      fn,
      cancelled: false,
    };
    this.push(ev);
    return () => {
      ev.cancelled = true;
    };
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.schedule(ms, resolve));
  }

  /** Runs events until virtual `untilMs`, the queue empties, `eventsMax` ran, or `done()`. */
  async run(untilMs: number, eventsMax: number, done: () => boolean = () => false): Promise<void> {
    await drainMicrotasks();
    while (this.heap.length > 0 && this.events < eventsMax && !done()) {
      const ev = this.pop();
      if (ev.cancelled) continue;
      if (ev.at > untilMs) {
        this.push(ev);
        break;
      }
      this.nowValue = ev.at;
      this.events++;
      ev.fn();
      await drainMicrotasks();
    }
  }

  private less(a: SimEvent, b: SimEvent): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(ev: SimEvent): void {
    const h = this.heap;
    h.push(ev);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i], h[parent])) break;
      [h[i], h[parent]] = [h[parent], h[i]];
      i = parent;
    }
  }

  private pop(): SimEvent {
    const h = this.heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l], h[m])) m = l;
        if (r < h.length && this.less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

/**
 * One simulated process (a worker): it can pause (its timers and incoming
 * messages wait until it resumes, as under a GC pause or SIGSTOP) and crash
 * (everything it had scheduled is dropped; a restart is a new incarnation).
 */
export class SimProcess {
  incarnation = 0;
  pausedUntil = 0;

  constructor(
    readonly name: string,
    private readonly sched: SimScheduler,
  ) {}

  /** Runs `fn` in this process after `delayMs`, later if paused, never if it crashed meanwhile. */
  schedule(delayMs: number, fn: () => void): () => void {
    const incarnation = this.incarnation;
    let cancelInner: () => void = () => undefined;
    const fire = () => {
      if (this.incarnation !== incarnation) return;
      if (this.sched.now < this.pausedUntil) {
        cancelInner = this.sched.schedule(this.pausedUntil - this.sched.now, fire);
        return;
      }
      fn();
    };
    cancelInner = this.sched.schedule(delayMs, fire);
    return () => cancelInner();
  }

  /** Waits `ms` in this process (the hop retry layer's wait): never ends if it crashes meanwhile. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        cancel();
        reject(abortReason(signal!));
      };
      const cancel = this.schedule(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  pause(forMs: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, this.sched.now + forMs);
  }

  crash(): void {
    this.incarnation++;
    this.pausedUntil = 0;
  }

  /** The SDK's `clock` port for this process: monotonic virtual ms. */
  clock(): Clock {
    return {
      nowMs: () => this.sched.now,
      setTimer: (fn: () => void, delayMs: number): Timer => ({
        cancel: this.schedule(delayMs, fn),
      }),
    };
  }
}
