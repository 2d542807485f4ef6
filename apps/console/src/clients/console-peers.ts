import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileTokenProvider } from '@dlock/identity';
import { JsonPeer, type CallBudget } from '@dlock/http-client';
import { LockServerReadClient } from '@dlock/lock-client';
import { SafetyEventsClient } from '@dlock/observability';
import { PaymentResourceClient, RailProxyClient } from '@dlock/payout-contract';
import type { ConsoleConfig } from '../config';

/** The services the console reads and acts through; nothing else (docs/console.md). */
export type ServiceName = 'lock-server' | 'payment-resource' | 'rail-proxy';

/**
 * Whose identity the console acts as: the subject of its own lock-server
 * token (docs/security.md: a caller's owner id is its token's subject). The
 * token is only read here, never verified: the services verify it.
 */
export function operatorOf(tokenDir: string): string {
  const jwt = readFileSync(join(tokenDir, 'lock-server'), 'utf8').trim();
  const payload = jwt.split('.')[1];
  if (payload === undefined) throw new Error(`${tokenDir}/lock-server is not a JWT`);
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
    sub?: unknown;
  };
  if (typeof claims.sub !== 'string' || claims.sub === '')
    throw new Error(`${tokenDir}/lock-server names no subject`);
  return claims.sub;
}

/**
 * The services' typed clients for the reads they offer (each checks the
 * answer field by field, with the hop policy's budgets), and one JsonPeer per
 * service, with the console's budget, for the routes no client covers (the
 * ambiguous page, rail evidence, the operator actions). A service that does
 * not answer in time is shown as unreachable; the console carries on.
 */
export class ConsolePeers {
  readonly operator: string;
  readonly budget: CallBudget;
  readonly lockReads: LockServerReadClient;
  readonly payments: PaymentResourceClient;
  readonly rail: RailProxyClient;
  private readonly services: Record<ServiceName, JsonPeer>;
  /** Every service whose safety events the feed polls, by its name on the page. */
  readonly eventSources: readonly { name: string; client: SafetyEventsClient }[];

  constructor(config: ConsoleConfig) {
    const dir = config.AUTH_TOKEN_DIR;
    this.operator = operatorOf(dir);
    this.budget = {
      connectTimeoutMs: Math.max(50, Math.floor(config.CONSOLE_CALL_TIMEOUT_MS / 4)),
      readTimeoutMs: config.CONSOLE_CALL_TIMEOUT_MS,
    };
    const token = (audience: string) => fileTokenProvider(dir, audience);
    this.lockReads = new LockServerReadClient(config.LOCK_SERVER_URL, token('lock-server'));
    this.payments = new PaymentResourceClient(
      config.PAYMENT_RESOURCE_URL,
      this.operator,
      token('payment-resource'),
    );
    this.rail = new RailProxyClient(
      config.RAIL_PROXY_URL,
      this.operator,
      undefined,
      token('rail-proxy'),
    );
    const peer = (name: ServiceName, url: string) =>
      new JsonPeer(name, url, { token: token(name) });
    this.services = {
      'lock-server': peer('lock-server', config.LOCK_SERVER_URL),
      'payment-resource': peer('payment-resource', config.PAYMENT_RESOURCE_URL),
      'rail-proxy': peer('rail-proxy', config.RAIL_PROXY_URL),
    };
    this.eventSources = config.eventSources.map((s) => ({
      name: s.name,
      client: new SafetyEventsClient(
        s.name,
        s.url,
        token(s.name.startsWith('executor') ? 'executor' : s.name),
      ),
    }));
  }

  get<T>(service: ServiceName, path: string, signal?: AbortSignal): Promise<T> {
    return this.services[service].call<T>({ method: 'GET', path, budget: this.budget, signal });
  }

  /** One presentation, never re-sent: an operator action's answer is shown as it came. */
  post<T>(service: ServiceName, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.services[service].call<T>({
      method: 'POST',
      path,
      body,
      budget: this.budget,
      signal,
    });
  }

  close(): void {
    for (const p of Object.values(this.services)) p.close();
    for (const s of this.eventSources) s.client.close();
    this.lockReads.close();
    this.payments.close();
    this.rail.close();
  }
}
