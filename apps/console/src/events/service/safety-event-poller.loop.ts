import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { ConsolePeers } from '../../console-peers.client';
import { CONSOLE_CONFIG, type ConsoleConfig } from '../../config';
import { EventFeed } from './event-feed.service';
import { describeFailure } from '../../failure.errors';

/** Events asked for per service per poll. */
const PAGE_LIMIT = 100;

/**
 * Asks every service for its new safety events about once a second, each
 * with its own cursor and the console's call budget, and hands them to the
 * feed. A service that fails is marked unreachable; the next poll tries again.
 */
@Injectable()
export class SafetyEventPoller implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('safety-feed');
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    @Inject(CONSOLE_CONFIG) private readonly config: ConsoleConfig,
    private readonly peers: ConsolePeers,
    private readonly feed: EventFeed,
  ) {}

  onModuleInit(): void {
    this.schedule(0);
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.peers.close();
  }

  /** One pass over every source; never rejects. */
  async pollOnce(): Promise<void> {
    await Promise.all(
      this.peers.eventSources.map(async ({ name, client }) => {
        try {
          const page = await client.after(
            this.feed.askAfter(name),
            PAGE_LIMIT,
            AbortSignal.timeout(this.config.CONSOLE_CALL_TIMEOUT_MS * 2),
          );
          this.feed.accept(name, page);
        } catch (err) {
          const why = describeFailure(err);
          this.logger.debug({ service: name, err: why }, 'safety events unreadable');
          this.feed.failed(name, why);
        }
      }),
    );
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.pollOnce().finally(() => this.schedule(this.config.CONSOLE_EVENT_POLL_MS));
    }, delayMs);
    this.timer.unref();
  }
}
