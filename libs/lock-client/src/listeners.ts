import type { LockClientLogger } from './options';

/**
 * One-shot listener list: fires at most once. A listener added after it fired
 * is called straight away (on a microtask), so registering "too late" cannot
 * miss a loss. A throwing listener is logged and does not stop the others.
 */
export class OnceListeners<T> {
  private listeners = new Set<(value: T) => void>();
  private fired: { value: T } | undefined;

  constructor(
    private readonly logger: LockClientLogger,
    private readonly what: string,
  ) {}

  add(listener: (value: T) => void): () => void {
    if (this.fired) {
      const { value } = this.fired;
      queueMicrotask(() => this.call(listener, value));
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  fire(value: T): void {
    if (this.fired) return;
    this.fired = { value };
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) this.call(listener, value);
  }

  private call(listener: (value: T) => void, value: T): void {
    try {
      listener(value);
    } catch (err) {
      this.logger.error({ err, listener: this.what }, 'lock-client listener threw');
    }
  }
}
