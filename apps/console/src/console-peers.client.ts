import { Global, Module } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileTokenProvider, ForbiddenError, type TokenProvider } from '@dlock/identity';
import { ACTING_FOR_HEADER } from '@dlock/http-contract';
import { JsonPeer, type CallBudget } from '@dlock/http-client';
import { LockClient, LockServerReadClient } from '@dlock/lock-client';
import { OWNER_ID_MAX_LENGTH } from '@dlock/lock-api';
import { SafetyEventsClient } from '@dlock/observability';
import { PaymentResourceClient, RailProxyClient } from '@dlock/payout-contract';
import { CONSOLE_CONFIG, type ConsoleConfig } from './config';
import type { Actor } from './sessions/service/session-store.service';

/** The services the console reads and acts through; nothing else (docs/console.md). */
export type ServiceName = 'lock-server' | 'payment-resource' | 'rail-proxy';

/**
 * The console's own identity: the subject of its lock-server token
 * (docs/security.md: a caller's owner id is its token's subject). The token
 * is only read here, never verified: the services verify it.
 */
export function identityOf(tokenDir: string): string {
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

/** The clients one action uses as the person signed in; closed when it ends. */
export interface ActingClients {
  payments: PaymentResourceClient;
  locks: LockClient;
  close: () => void;
}

/**
 * The services' typed clients for the reads they offer (each checks the
 * answer field by field, with the hop policy's budgets), and one JsonPeer per
 * service, with the console's budget, for the routes no client covers (the
 * ambiguous page, rail evidence, the operator actions). Reads go as the
 * console itself; every action goes as the person signed in: the console's
 * token plus theirs in X-Acting-For (docs/security.md, "Acting for a
 * person"). A service that does not answer in time is shown as unreachable;
 * the console carries on.
 */
export class ConsolePeers {
  /** The console's own identity (`console` under npm start). */
  readonly identity: string;
  readonly budget: CallBudget;
  readonly lockReads: LockServerReadClient;
  readonly payments: PaymentResourceClient;
  readonly rail: RailProxyClient;
  private readonly services: Record<ServiceName, JsonPeer>;
  private readonly tokens: Record<ServiceName, TokenProvider>;
  private readonly urls: Record<ServiceName, string>;
  /** Every service whose safety events the feed polls, by its name on the page. */
  readonly eventSources: readonly { name: string; client: SafetyEventsClient }[];

  constructor(config: ConsoleConfig) {
    const dir = config.AUTH_TOKEN_DIR;
    this.identity = identityOf(dir);
    this.budget = {
      connectTimeoutMs: Math.max(50, Math.floor(config.CONSOLE_CALL_TIMEOUT_MS / 4)),
      readTimeoutMs: config.CONSOLE_CALL_TIMEOUT_MS,
    };
    const token = (audience: string) => fileTokenProvider(dir, audience);
    this.tokens = {
      'lock-server': token('lock-server'),
      'payment-resource': token('payment-resource'),
      'rail-proxy': token('rail-proxy'),
    };
    this.urls = {
      'lock-server': config.LOCK_SERVER_URL,
      'payment-resource': config.PAYMENT_RESOURCE_URL,
      'rail-proxy': config.RAIL_PROXY_URL,
    };
    this.lockReads = new LockServerReadClient(config.LOCK_SERVER_URL, this.tokens['lock-server']);
    this.payments = new PaymentResourceClient(
      config.PAYMENT_RESOURCE_URL,
      this.identity,
      this.tokens['payment-resource'],
    );
    this.rail = new RailProxyClient(
      config.RAIL_PROXY_URL,
      this.identity,
      undefined,
      this.tokens['rail-proxy'],
    );
    const peer = (name: ServiceName) =>
      new JsonPeer(name, this.urls[name], { token: this.tokens[name] });
    this.services = {
      'lock-server': peer('lock-server'),
      'payment-resource': peer('payment-resource'),
      'rail-proxy': peer('rail-proxy'),
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

  /**
   * An action as `actor`: one presentation, never re-sent, its answer shown
   * as it came.
   */
  post<T>(
    service: ServiceName,
    path: string,
    body: unknown,
    actor: Actor,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.services[service].call<T>({
      method: 'POST',
      path,
      headers: { [ACTING_FOR_HEADER]: actor.token },
      body,
      budget: this.budget,
      signal,
    });
  }

  /**
   * A payment-resource client and a lock client acting as `actor` (their
   * owner id is the person, X-Acting-For their token), for one action.
   */
  actingFor(actor: Actor): ActingClients {
    // An owner id is 1..64 printable ASCII (docs/contract.md); an OIDC subject may not be one.
    if (actor.subject.length > OWNER_ID_MAX_LENGTH || !/^[\x20-\x7e]+$/.test(actor.subject))
      throw new ForbiddenError(
        `this identity cannot own a lock (not 1..${OWNER_ID_MAX_LENGTH} printable ASCII)`,
        { reason: 'owner-id' },
      );
    const headers = () => ({ [ACTING_FOR_HEADER]: actor.token });
    const payments = new PaymentResourceClient(
      this.urls['payment-resource'],
      actor.subject,
      this.tokens['payment-resource'],
      headers,
    );
    const locks = new LockClient({
      baseUrl: this.urls['lock-server'],
      ownerId: actor.subject,
      token: this.tokens['lock-server'],
      headers,
    });
    return { payments, locks, close: () => payments.close() };
  }

  close(): void {
    for (const p of Object.values(this.services)) p.close();
    for (const s of this.eventSources) s.client.close();
    this.lockReads.close();
    this.payments.close();
    this.rail.close();
  }
}

/** The console's one set of peers, shared by every feature (app-wide, so global). */
@Global()
@Module({
  providers: [
    {
      provide: ConsolePeers,
      inject: [CONSOLE_CONFIG],
      useFactory: (config: ConsoleConfig) => new ConsolePeers(config),
    },
  ],
  exports: [ConsolePeers],
})
export class ConsolePeersModule {}
