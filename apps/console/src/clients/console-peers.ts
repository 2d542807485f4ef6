import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileTokenProvider } from '@dlock/identity';
import { JsonPeer, type CallBudget } from '@dlock/http-client';
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
 * One JsonPeer per service, each with the console's token for that audience
 * and one budget for every call: a service that does not answer in time is
 * shown as unreachable, and the console carries on (no retries: the page
 * asks again on its next refresh).
 */
export class ConsolePeers {
  readonly operator: string;
  readonly budget: CallBudget;
  private readonly services: Record<ServiceName, JsonPeer>;
  /** Every service whose safety events the feed polls, by its name on the page. */
  readonly eventSources: readonly { name: string; peer: JsonPeer }[];

  constructor(config: ConsoleConfig) {
    const dir = config.AUTH_TOKEN_DIR;
    this.operator = operatorOf(dir);
    this.budget = {
      connectTimeoutMs: Math.max(50, Math.floor(config.CONSOLE_CALL_TIMEOUT_MS / 4)),
      readTimeoutMs: config.CONSOLE_CALL_TIMEOUT_MS,
    };
    const peer = (name: string, url: string, audience: string) =>
      new JsonPeer(name, url, { token: fileTokenProvider(dir, audience) });
    this.services = {
      'lock-server': peer('lock-server', config.LOCK_SERVER_URL, 'lock-server'),
      'payment-resource': peer('payment-resource', config.PAYMENT_RESOURCE_URL, 'payment-resource'),
      'rail-proxy': peer('rail-proxy', config.RAIL_PROXY_URL, 'rail-proxy'),
    };
    this.eventSources = config.eventSources.map((s) => ({
      name: s.name,
      peer:
        s.name in this.services
          ? this.services[s.name as ServiceName]
          : peer(s.name, s.url, s.name.startsWith('executor') ? 'executor' : s.name),
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
    for (const s of this.eventSources) s.peer.close();
  }
}
