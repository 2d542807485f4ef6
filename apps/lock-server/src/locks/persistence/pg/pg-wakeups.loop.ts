import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Client, type Notification } from 'pg';
import { WAIT_MAX_MS } from '@dlock/lock-api';
import type { ReleaseAnnouncer, ReleaseSignal } from './release-signal.model';

/** A replica says it has an acquire waiting for a key: `<replica> <key>`. */
const WAITING_CHANNEL = 'dlock_lock_waiting';
/** A replica freed a key another one waits for: `<replica> <key>`. */
const FREED_CHANNEL = 'dlock_lock_freed';
/** One announcement per key per second at most: the hot path stays a Map lookup. */
const ANNOUNCE_EVERY_MS = 1_000;
/** A remote waiter is believed to wait this long after its last announcement (no wait is longer). */
const REMOTE_WAITING_MS = WAIT_MAX_MS + ANNOUNCE_EVERY_MS;
/** Keys remembered either way; beyond it the memory starts over (bounded, like SessionOwners). */
const KEYS_REMEMBERED_MAX = 10_000;
const RECONNECT_DELAY_MAX_MS = 5_000;

/**
 * Cross-replica wake-ups on the pg backend (docs/lock-server.md, "Waits"): a
 * release made through one replica wakes an acquire waiting on another at
 * once, by PostgreSQL LISTEN/NOTIFY, instead of at the waiter's next poll.
 * Only keys someone waits for cost anything: a replica whose acquire starts
 * waiting announces the key; a replica that frees an announced key notifies.
 * A lost notification (a reconnect, a restart) costs latency, never safety:
 * the waiter's poll still runs, and the grant is decided by the acquire
 * statement as always.
 */
export class PgWakeups implements ReleaseAnnouncer {
  private readonly logger = new Logger('lockdb-wakeups');
  private readonly replica = randomUUID();
  private readonly announcedAtMs = new Map<string, number>();
  private readonly remoteWaitingUntilMs = new Map<string, number>();
  private client: Client | null = null;
  private stopped = false;
  private reconnectDelayMs = 250;

  constructor(
    private readonly url: string,
    private readonly signal: ReleaseSignal,
  ) {}

  start(): void {
    this.signal.announceTo(this);
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.client?.end().catch(() => undefined);
  }

  waiting(key: string): void {
    const now = performance.now();
    if (now - (this.announcedAtMs.get(key) ?? -Infinity) < ANNOUNCE_EVERY_MS) return;
    remember(this.announcedAtMs, key, now);
    this.send(WAITING_CHANNEL, key);
  }

  freed(keys: readonly string[]): void {
    const now = performance.now();
    for (const key of keys) {
      const until = this.remoteWaitingUntilMs.get(key);
      if (until === undefined) continue;
      if (until > now) this.send(FREED_CHANNEL, key);
      else this.remoteWaitingUntilMs.delete(key);
    }
  }

  private send(channel: string, key: string): void {
    const client = this.client;
    if (client === null) return;
    // Fire and forget: a lost notification only costs the waiter its poll interval.
    client
      .query('SELECT pg_notify($1, $2)', [channel, `${this.replica} ${key}`])
      .catch(() => undefined);
  }

  private onNotification = (msg: Notification): void => {
    const payload = msg.payload ?? '';
    const at = payload.indexOf(' ');
    if (at < 0 || payload.slice(0, at) === this.replica) return;
    const key = payload.slice(at + 1);
    if (msg.channel === WAITING_CHANNEL) {
      remember(this.remoteWaitingUntilMs, key, performance.now() + REMOTE_WAITING_MS);
    } else if (msg.channel === FREED_CHANNEL) {
      this.signal.wake([key]);
    }
  };

  /** One listening connection, made again with capped backoff whenever it is lost. */
  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({ connectionString: this.url, application_name: 'dlock-wakeups' });
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = null;
      this.retryLater();
    };
    client.on('error', () => undefined);
    client.on('notification', this.onNotification);
    client.on('end', onLost);
    try {
      await client.connect();
      await client.query(`LISTEN ${WAITING_CHANNEL}; LISTEN ${FREED_CHANNEL}`);
      if (this.stopped) {
        await client.end();
        return;
      }
      this.client = client;
      this.reconnectDelayMs = 250;
    } catch (err) {
      this.logger.debug({ event: 'wakeups_unavailable', err }, 'cannot listen yet');
      await client.end().catch(() => undefined);
      onLost();
    }
  }

  private retryLater(): void {
    if (this.stopped) return;
    const delayMs = this.reconnectDelayMs;
    this.reconnectDelayMs = Math.min(delayMs * 2, RECONNECT_DELAY_MAX_MS);
    setTimeout(() => void this.connect(), delayMs).unref();
  }
}

function remember(map: Map<string, number>, key: string, value: number): void {
  if (map.size >= KEYS_REMEMBERED_MAX && !map.has(key)) map.clear();
  map.set(key, value);
}
