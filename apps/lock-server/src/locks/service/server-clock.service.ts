import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';

/** A scheduled callback; `cancel()` is idempotent. */
export interface ServerTimer {
  cancel(): void;
}

/**
 * The only time source of the lock-server's service layer: a port, so the
 * deterministic simulation (docs/harness.md, "Deterministic simulation")
 * runs the same code on its virtual clock. Expiry decisions are the
 * backend's, on its own clock; this one times waits, memos and hints.
 */
export abstract class ServerClock {
  /** Wall-clock milliseconds since the epoch (retry hints against a server instant). */
  abstract wallMs(): number;
  /** Monotonic milliseconds, arbitrary origin (deadlines of waits, memo ages). */
  abstract monotonicMs(): number;
  abstract setTimer(fn: () => void, delayMs: number): ServerTimer;
}

@Injectable()
export class SystemServerClock extends ServerClock {
  override wallMs(): number {
    return Date.now();
  }

  override monotonicMs(): number {
    return performance.now();
  }

  override setTimer(fn: () => void, delayMs: number): ServerTimer {
    const handle = setTimeout(fn, delayMs);
    return { cancel: () => clearTimeout(handle) };
  }
}
