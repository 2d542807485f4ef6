import { mkdirSync, readFileSync } from 'node:fs';
import type { JsonWebKey } from 'node:crypto';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { ensureSigningKeys, publicJwksPath, type AuthPolicy } from '@dlock/identity';
import { renderError } from '@dlock/http-contract';
import { parseFencingToken } from '@dlock/lock-api';
import { parsePeerJson, stringifyInt64Json } from '@dlock/http-client';
import type { WireRequest, WireResponse } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import type { LockServerConfig } from '../../../lock-server/src/config';
import {
  BrokenLockStore,
  type BrokenMode,
} from '../../../lock-server/src/locks/persistence/broken-lock.store';
import type { LockStore } from '../../../lock-server/src/locks/persistence/lock-store.port';
import {
  MemoryLockState,
  MemoryLockStore,
  MemorySessionRegistry,
} from '../../../lock-server/src/locks/persistence/memory/memory-store.providers';
import type { CallerBudget } from '../../../lock-server/src/locks/service/caller-budget.service';
import { GrantProofs } from '../../../lock-server/src/locks/service/grant-proofs.service';
import { LockService } from '../../../lock-server/src/locks/service/lock.service';
import {
  ServerClock,
  type ServerTimer,
} from '../../../lock-server/src/locks/service/server-clock.service';
import type { FencePoints } from '../../../lock-server/src/revocations/service/fence-points.service';
import { OwnerCaps } from '../../../lock-server/src/sessions/service/owner-caps.service';
import { SessionOwners } from '../../../lock-server/src/sessions/service/session-owners.service';
import { SessionService } from '../../../lock-server/src/sessions/service/session.service';
import type { LockCall } from '../infra/lock-recorder.infra';
import { SIM_EPOCH_MS, type SimScheduler } from './scheduler.sim';

/** One key ring per process: signing is real (Ed25519), and costs the same in every run. */
let signingKeys: string | undefined;
function simSigningKeys(): string {
  if (signingKeys === undefined) {
    const dir = join(process.cwd(), '.tmp', 'sim');
    mkdirSync(dir, { recursive: true });
    signingKeys = ensureSigningKeys(join(dir, 'grant-keys.json')).keys;
  }
  return signingKeys;
}

/** The public half of the lock-server's key ring: what the guards verify grant proofs against. */
export function simGrantJwks(): { keys: JsonWebKey[] } {
  return JSON.parse(readFileSync(publicJwksPath(simSigningKeys()), 'utf8')) as {
    keys: JsonWebKey[];
  };
}

/** The lock-server's settings the service layer reads; the defaults of config.ts. */
function simConfig(): LockServerConfig {
  return {
    GRANT_SIGNING_KEYS: simSigningKeys(),
    LOCK_DEFAULT_TTL_MS: 15_000,
    LOCK_SESSION_TTL_MS: 15_000,
    LOCK_SESSION_TTL_MAX_MS: 60_000,
    LOCK_WAITERS_MAX: 64,
    LOCK_WAITERS_PER_OWNER_MAX: 32,
    LOCK_WAITERS_TOTAL_MAX: 256,
    LOCK_SESSIONS_PER_OWNER_MAX: 16,
    LOCK_LOCKS_PER_OWNER_MAX: 256,
    LOCK_WAIT_POLL_MS: 100,
    LOCK_CONTENTION_RETRY_AFTER_MS: 500,
    LOCK_CONTENDED_RETRY_AFTER_MAX_MS: 1000,
    LOCK_SESSION_RETENTION_MS: 3_600_000,
  } as LockServerConfig;
}

class SimServerClock extends ServerClock {
  constructor(private readonly sched: SimScheduler) {
    super();
  }
  override wallMs(): number {
    return SIM_EPOCH_MS + this.sched.now;
  }
  override monotonicMs(): number {
    return this.sched.now;
  }
  override setTimer(fn: () => void, delayMs: number): ServerTimer {
    return { cancel: this.sched.schedule(delayMs, fn) };
  }
}

/** A seeded UUID v4 (the lock-server's ids must look like its real ones). */
function seededUuid(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

export interface LockServerNodeOptions {
  /** Negative control: the store breaks one rule of docs/lock-server.md (BrokenLockStore). */
  brokenStore?: BrokenMode;
  /** Upper bound of one store step's virtual time (a database round trip). */
  storeStepMaxMs?: number;
}

/**
 * The lock-server's own service layer (LockService, SessionService, the real
 * GrantProofs, OwnerCaps and SessionOwners) on the memory backend, all on the
 * simulator's clock, behind a small router that speaks the L1–L6 wire
 * contract. No Nest, no HTTP, no socket: the SDK's transport calls `serve`.
 * Every call is recorded at the server's door, as the harness's LockRecorder
 * records them, for the linearizability checker.
 */
export class LockServerNode {
  readonly state: MemoryLockState;
  readonly calls: LockCall[] = [];
  private readonly locks: LockService;
  private readonly sessions: SessionService;

  constructor(sched: SimScheduler, random: () => number, options: LockServerNodeOptions = {}) {
    const stepMaxMs = options.storeStepMaxMs ?? 2;
    this.state = new MemoryLockState(
      {
        nowMs: () => SIM_EPOCH_MS + sched.now,
        newId: () => seededUuid(random),
        step: () => sched.sleep(Math.floor(random() * (stepMaxMs + 1))),
      },
      3_600_000,
    );
    const config = simConfig();
    const clock = new SimServerClock(sched);
    let store: LockStore = new MemoryLockStore(this.state);
    if (options.brokenStore) store = new BrokenLockStore(store, options.brokenStore);
    const registry = new MemorySessionRegistry(this.state);
    const owners = new SessionOwners(registry);
    const caps = new OwnerCaps(registry, config, clock);
    const safety = new SafetyEvents(new Registry());
    const policy = { decide: () => ({ allowed: false }) } as unknown as AuthPolicy;
    const unused = {} as FencePoints & CallerBudget;
    this.locks = new LockService(
      store,
      registry,
      safety,
      new GrantProofs(config),
      owners,
      policy,
      unused,
      unused,
      caps,
      config,
      clock,
    );
    this.sessions = new SessionService(registry, this.locks, owners, caps, config);
    this.now = () => sched.now;
  }

  private readonly now: () => number;

  /** The SDK-facing endpoint: one wire request in, one wire answer out; never rejects. */
  readonly serve = async (req: WireRequest): Promise<WireResponse> => {
    const call: LockCall = {
      seq: this.calls.length,
      method: req.method,
      url: req.url.pathname,
      ownerId: req.headers['x-owner-id'] ?? null,
      fencingToken: req.headers['x-fencing-token'] ?? null,
      request: req.body === undefined ? null : parsePeerJson(req.body),
      requestAt: this.now(),
      responseAt: null,
      outcome: 'pending',
      status: null,
      response: null,
    };
    this.calls.push(call);
    let status: number;
    let body: unknown;
    try {
      [status, body] = await this.route(req, call.request as Record<string, unknown> | null);
    } catch (err) {
      const rendered = renderError(err, `sim-${call.seq}`, req.method);
      [status, body] = [rendered.status, rendered.body];
    }
    const text = body === undefined ? '' : stringifyInt64Json(body);
    Object.assign(call, {
      responseAt: this.now(),
      outcome: 'answered',
      status,
      response: text === '' ? null : parsePeerJson(text),
    });
    return { status, text };
  };

  private async route(
    req: WireRequest,
    body: Record<string, unknown> | null,
  ): Promise<[number, unknown]> {
    const owner = req.headers['x-owner-id'] ?? '';
    const parts = req.url.pathname.split('/').map(decodeURIComponent);
    const [, , kind, id, action] = parts;
    if (kind === 'sessions' && req.method === 'POST' && id === undefined) {
      const s = await this.sessions.open(owner, Number(body?.ttlMillis));
      return [201, sessionView(s)];
    }
    if (kind === 'sessions' && action === 'heartbeat') {
      const b = await this.sessions.heartbeat(owner, id);
      return [200, { ...b, expiresAt: iso(b.expiresAt), serverTime: iso(b.serverTime) }];
    }
    if (kind === 'sessions' && req.method === 'DELETE') {
      await this.sessions.close(owner, id);
      return [204, undefined];
    }
    if (kind === 'locks' && action === 'acquire') {
      const signed = await this.locks.acquire({
        key: id,
        sessionId: String(body?.sessionId),
        ownerId: owner,
        ttlMillis: Number(body?.ttlMillis),
        waitMillis: Number(body?.waitMillis ?? 0),
      });
      return [200, grantView(signed.grant, signed.proof)];
    }
    const token = parseFencingToken(req.headers['x-fencing-token'], 'X-Fencing-Token');
    if (kind === 'locks' && action === 'renew') {
      const ttl = body?.ttlMillis === undefined ? undefined : Number(body.ttlMillis);
      const signed = await this.locks.renew(owner, id, String(body?.sessionId), token, ttl);
      return [200, grantView(signed.grant, signed.proof)];
    }
    if (kind === 'locks' && req.method === 'DELETE') {
      await this.locks.release(owner, id, token, req.headers['x-grant-proof']);
      return [204, undefined];
    }
    throw new Error(`simulated lock-server has no route ${req.method} ${req.url.pathname}`);
  }
}

function iso(d: Date): string {
  return d.toISOString();
}

function sessionView(s: {
  sessionId: string;
  ownerId: string;
  ttlMillis: number;
  expiresAt: Date;
}) {
  return { ...s, expiresAt: iso(s.expiresAt) };
}

function grantView(
  g: {
    key: string;
    ownerId: string;
    sessionId: string;
    fencingToken: bigint;
    acquiredAt: Date;
    expiresAt: Date;
  },
  proof: string,
) {
  return {
    key: g.key,
    ownerId: g.ownerId,
    sessionId: g.sessionId,
    fencingToken: g.fencingToken.toString(),
    acquiredAt: iso(g.acquiredAt),
    expiresAt: iso(g.expiresAt),
    grantProof: proof,
  };
}
