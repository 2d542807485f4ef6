import http from 'node:http';
import { performance } from 'node:perf_hooks';

/** One grant as the lock-server answered it (INV-04, INV-06, INV-07). */
export interface GrantRecord {
  key: string;
  ownerId: string;
  token: bigint;
  /** The lock-server's proof of the grant, as it answered it (docs/security.md). */
  proof: string;
  /**
   * performance.now() when the acquire request reached the recorder, or an earlier
   * acquire of the same session whose answer was lost or a 5xx (it may have minted it).
   */
  requestAt: number;
  /** performance.now() when the 200 came back from the lock-server. */
  grantedAt: number;
  /** performance.now() when a release that then answered 204 was received; null otherwise. */
  releaseSentAt: number | null;
}

export interface RevocationRecord {
  key: string;
  revokedToken: bigint;
  newTokenFloor: bigint;
  at: number;
}

/**
 * One L1–L8 call as it passed the recorder, for the linearizability checker
 * (docs/harness.md, "Linearizability"). Registered before it is forwarded, so
 * a call the lock-server may already have acted on is never missing: until its
 * answer is back it is `pending`; an answer that never came (the lock-server
 * died, reset the connection or timed out) leaves it `lost`.
 */
export interface LockCall {
  /** Order of arrival at the recorder. */
  seq: number;
  method: string;
  /** Path and query, as sent. */
  url: string;
  /** `X-Owner-Id`, as sent. */
  ownerId: string | null;
  /** `X-Fencing-Token`, as sent (unparsed: a malformed one is the server's to refuse). */
  fencingToken: string | null;
  /** The JSON request body, or null. */
  request: unknown;
  /** performance.now() when the request reached the recorder. */
  requestAt: number;
  /** performance.now() when the whole answer was back; null while pending or when lost. */
  responseAt: number | null;
  outcome: 'pending' | 'answered' | 'lost';
  status: number | null;
  /** The JSON answer, or null. */
  response: unknown;
}

const UPSTREAM_TIMEOUT_MS = 40_000;
/** How far back an unanswered acquire may have minted a grant handed back later. */
const MINTED_LOOKBACK_MS = 120_000;
const BODY_MAX_BYTES = 1 << 20;
/** Enough for a long soak (~50 k calls in 10 minutes); beyond it calls are counted, not kept. */
const CALLS_MAX = 1_000_000;
/** The lock-server's L1–L8 routes; listings, health and metrics are not recorded. */
const LOCK_CALL_PATH =
  /^\/v1\/(sessions(\/[^/]+(\/heartbeat)?)?|locks\/[^/]+(\/(acquire|renew|revoke))?)$/;

/**
 * An HTTP reverse proxy in front of the lock-server that records every grant,
 * release and revocation exactly as the server answered them. The history is
 * independent of the lock-server's own code, so the INV-06 check cannot be
 * fooled by the thing it checks. When the lock-server is unreachable the
 * client's connection is reset, as if the server itself were gone.
 */
export class LockRecorder {
  readonly grants: GrantRecord[] = [];
  readonly revocations: RevocationRecord[] = [];
  /** Acquire answers by status, for evidence (e.g. 409/429 under contention, 5xx in outages). */
  readonly acquireStatuses = new Map<number, number>();
  upstreamFailures = 0;
  /** Every L1–L8 call, in arrival order (the linearizability checker's history). */
  readonly calls: LockCall[] = [];
  /** Calls beyond CALLS_MAX, not kept: a history missing them cannot be judged. */
  callsDropped = 0;

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(targetPort: number): Promise<LockRecorder> {
    const ref: { r?: LockRecorder } = {};
    const server = http.createServer((req, res) => ref.r?.handle(req, res));
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    ref.r = new LockRecorder(server, port, { host: '127.0.0.1', port: targetPort });
    return ref.r;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * The grant `token` of `key` as its holder holds it (the token and its
   * proof): what a stale holder the harness impersonates still presents.
   */
  fenceOf(key: string, token: bigint): { token: bigint; proof: string } {
    const grant = this.grants.find((g) => g.key === key && g.token === token);
    if (!grant) throw new Error(`no grant of ${key} with token ${token} was recorded`);
    return { token, proof: grant.proof };
  }

  /** Every token the server granted for `key` (INV-07). */
  tokensFor(key: string): Set<bigint> {
    return new Set(this.grants.filter((g) => g.key === key).map((g) => g.token));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const requestAt = performance.now();
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= BODY_MAX_BYTES) chunks.push(c);
    });
    req.on('error', () => req.socket.destroy());
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const call = this.register(req, body, requestAt);
      const headers = { ...req.headers, host: `${this.target.host}:${this.target.port}` };
      const up = http.request(
        {
          ...this.target,
          method: req.method,
          path: req.url,
          headers,
          timeout: UPSTREAM_TIMEOUT_MS,
        },
        (upRes) => {
          const out: Buffer[] = [];
          upRes.on('data', (c: Buffer) => out.push(c));
          upRes.on('error', () => {
            if (call) lose(call);
            req.socket.destroy();
          });
          upRes.on('end', () => {
            const payload = Buffer.concat(out);
            if (call) answer(call, upRes.statusCode ?? 0, payload);
            this.record(req, upRes.statusCode ?? 0, payload, requestAt);
            res.writeHead(upRes.statusCode ?? 502, upRes.headers);
            res.end(payload);
          });
        },
      );
      up.on('timeout', () => up.destroy(new Error('upstream timeout')));
      up.on('error', () => {
        if (call) lose(call);
        this.upstreamFailures++;
        req.socket.destroy();
      });
      up.end(body);
    });
  }

  /**
   * The earliest moment this grant can have been minted: its own request, or an
   * earlier acquire of the same key on the same session whose answer was lost or
   * a 5xx (that call may have granted; this one then handed the grant back).
   * An answered 2xx/4xx acquire in between says the earlier ones did not.
   */
  private mintedFrom(key: string, sessionId: unknown, requestAt: number): number {
    let from = requestAt;
    const session = String(sessionId).toLowerCase();
    for (let i = this.calls.length - 1; i >= 0; i--) {
      const c = this.calls[i];
      // Calls are kept in arrival order; no grant outlives its session this long.
      if (c.requestAt < requestAt - MINTED_LOOKBACK_MS) break;
      if (c.requestAt >= requestAt || c.method !== 'POST') continue;
      const m = /^\/v1\/locks\/([^/]+)\/acquire$/.exec(new URL(c.url, 'http://x').pathname);
      if (!m || decodeURIComponent(m[1]) !== key) continue;
      const sent = (c.request as { sessionId?: unknown } | null)?.sessionId;
      if (String(sent).toLowerCase() !== session) continue;
      const indeterminate = c.outcome !== 'answered' || (c.status ?? 0) >= 500;
      if (!indeterminate) break;
      from = Math.min(from, c.requestAt);
    }
    return from;
  }

  /** Registers an L1–L8 call as pending before it goes upstream; null for anything else. */
  private register(req: http.IncomingMessage, body: Buffer, requestAt: number): LockCall | null {
    const url = req.url ?? '/';
    const path = new URL(url, 'http://x').pathname;
    // GET /v1/sessions is the console's listing, not L1.
    if (!LOCK_CALL_PATH.test(path) || (req.method === 'GET' && path === '/v1/sessions'))
      return null;
    if (this.calls.length >= CALLS_MAX) {
      this.callsDropped++;
      return null;
    }
    const call: LockCall = {
      seq: this.calls.length,
      method: req.method ?? 'GET',
      url,
      ownerId: header(req, 'x-owner-id'),
      fencingToken: header(req, 'x-fencing-token'),
      request: body.length > 0 ? parse(body) : null,
      requestAt,
      responseAt: null,
      outcome: 'pending',
      status: null,
      response: null,
    };
    this.calls.push(call);
    return call;
  }

  private record(req: http.IncomingMessage, status: number, payload: Buffer, requestAt: number) {
    const now = performance.now();
    const url = new URL(req.url ?? '/', 'http://x');
    const m = /^\/v1\/locks\/([^/]+)(\/(acquire|revoke|renew))?$/.exec(url.pathname);
    if (!m) return;
    const key = decodeURIComponent(m[1]);
    const action = m[3] ?? (req.method === 'DELETE' ? 'release' : 'info');
    if (action === 'acquire') {
      this.acquireStatuses.set(status, (this.acquireStatuses.get(status) ?? 0) + 1);
      if (status !== 200) return;
      const body = parse(payload);
      if (!body || typeof body.fencingToken !== 'string') return;
      const token = BigInt(body.fencingToken);
      // A same-owner, same-session re-acquire returns the same grant (docs/lock-server.md): one record.
      if (this.grants.some((g) => g.key === key && g.token === token)) return;
      this.grants.push({
        key,
        ownerId: typeof body.ownerId === 'string' ? body.ownerId : '',
        token,
        proof: typeof body.grantProof === 'string' ? body.grantProof : '',
        requestAt: this.mintedFrom(key, body.sessionId, requestAt),
        grantedAt: now,
        releaseSentAt: null,
      });
    } else if (action === 'release' && status === 204) {
      const raw = req.headers['x-fencing-token'];
      const token = typeof raw === 'string' && /^\d+$/.test(raw) ? BigInt(raw) : null;
      const grant = this.grants.find((g) => g.key === key && g.token === token);
      if (grant && grant.releaseSentAt === null) grant.releaseSentAt = requestAt;
    } else if (action === 'revoke' && status === 200) {
      const body = parse(payload);
      if (!body) return;
      this.revocations.push({
        key,
        revokedToken: BigInt(String(body.revokedToken)),
        newTokenFloor: BigInt(String(body.newTokenFloor)),
        at: now,
      });
    }
  }
}

function answer(call: LockCall, status: number, payload: Buffer): void {
  if (call.outcome !== 'pending') return;
  call.outcome = 'answered';
  call.status = status;
  call.responseAt = performance.now();
  call.response = payload.length > 0 ? parse(payload) : null;
}

function lose(call: LockCall): void {
  if (call.outcome === 'pending') call.outcome = 'lost';
}

function header(req: http.IncomingMessage, name: string): string | null {
  const v = req.headers[name];
  return typeof v === 'string' ? v : null;
}

function parse(payload: Buffer): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(payload.toString('utf8'));
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
