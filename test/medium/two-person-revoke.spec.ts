import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  http,
  migratedDatabase,
  sleep,
  spawnApp,
  startEtcd,
  testBearer,
  withClient,
  type EtcdCluster,
  type RunningApp,
} from '@dlock/testing';

/**
 * Separation of duties on force-revoke (docs/security.md): under a policy with
 * `revoke.approvals: 2`, POST /v1/locks/{key}/revoke only files a request
 * (202); the lock is revoked when a different operator approves it within the
 * window. Real lock-server processes on both backends, sharing their store:
 * one with a five-minute window, one with a one-second window.
 */
jest.setTimeout(180_000);

const TRACE_ID = expect.stringMatching(/^[0-9a-f]{32}$/);
const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f-]{27}$/);
const INSTANT = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const dir = mkdtempSync(path.join(tmpdir(), 'dlock-two-person-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function policy(windowMs: number): string {
  const file = path.join(dir, `policy-${windowMs}.yaml`);
  writeFileSync(
    file,
    `version: 1
revoke: { approvals: 2, approvalWindowMs: ${windowMs} }
roles:
  worker:
    lockKeys: ['*']
    operations: [sessions.open, sessions.heartbeat, sessions.close, locks.acquire, locks.release]
  operator:
    operations: [locks.inspect, locks.read-grants, locks.revoke, revocations.approve, revocations.list]
identities:
  - { subject: 'worker-*', roles: [worker] }
  - { subject: 'operator-*', roles: [operator] }
`,
  );
  return file;
}

interface Backend {
  name: string;
  env(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

let etcd: EtcdCluster | undefined;
const BACKENDS: Backend[] = [
  {
    name: 'pg',
    async env() {
      return { LOCK_BACKEND: 'pg', LOCKDB_URL: await migratedDatabase('lockdb') };
    },
    async stop() {},
  },
  {
    name: 'etcd',
    async env() {
      etcd = await startEtcd({ label: 'two-person-revoke' });
      return {
        LOCK_BACKEND: 'etcd',
        ETCD_ENDPOINTS: etcd.endpoints.join(','),
        ETCD_KEY_PREFIX: '/two-person/',
      };
    },
    async stop() {
      await etcd?.stop();
    },
  },
];

describe.each(BACKENDS)('two-person force-revoke on $name', (backend) => {
  let wide: RunningApp;
  let narrow: RunningApp;
  let backendEnv: Record<string, string>;

  beforeAll(async () => {
    backendEnv = await backend.env();
    [wide, narrow] = await Promise.all([
      spawnApp('lock-server', { ...backendEnv, AUTH_POLICY: policy(300_000) }),
      spawnApp('lock-server', { ...backendEnv, AUTH_POLICY: policy(1_000) }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([wide?.stop(), narrow?.stop()]);
    await backend.stop();
  });

  async function as(
    subject: string,
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    const res = await http(method, url, {
      headers: { ...headers, authorization: await testBearer(subject, 'lock-server') },
      body,
    });
    return { status: res.status, body: res.body };
  }

  /** A key held by worker-1; returns the key and its token. */
  async function heldKey(server: RunningApp): Promise<{ key: string; token: string }> {
    const session = await as('worker-1', 'POST', `${server.url}/v1/sessions`, {
      ownerId: 'worker-1',
      ttlMillis: 60_000,
    });
    const key = `acct:${Math.random().toString(36).slice(2)}`;
    const grant = await as(
      'worker-1',
      'POST',
      `${server.url}/v1/locks/${key}/acquire`,
      { sessionId: session.body.sessionId, ttlMillis: 60_000 },
      { 'x-owner-id': 'worker-1' },
    );
    expect(grant.status).toBe(200);
    return { key, token: grant.body.fencingToken as string };
  }

  async function holder(server: RunningApp, key: string) {
    const info = await as('operator-x', 'GET', `${server.url}/v1/locks/${key}`);
    return { held: info.body.held as boolean, token: info.body.fencingToken as string | undefined };
  }

  // The requester names themself: the audit records the authenticated identity either way.
  const revokeBody = { operator: 'operator-alice', reason: 'stuck worker OPS-42' };

  it('a request by one operator and an approval by another revoke the lock', async () => {
    const { key, token } = await heldKey(wide);
    const requested = await as(
      'operator-alice',
      'POST',
      `${wide.url}/v1/locks/${key}/revoke`,
      revokeBody,
    );
    expect(requested).toEqual({
      status: 202,
      body: {
        requestId: UUID,
        key,
        status: 'PENDING_APPROVAL',
        operator: 'operator-alice',
        reason: 'stuck worker OPS-42',
        requestedBy: 'operator-alice',
        requestedAt: INSTANT,
        expiresAt: INSTANT,
      },
    });
    const window = Date.parse(requested.body.expiresAt) - Date.parse(requested.body.requestedAt);
    expect(window).toBe(300_000);
    // Only a request so far: the holder keeps its lock.
    expect(await holder(wide, key)).toEqual({ held: true, token });
    const requestId = requested.body.requestId as string;
    // Any replica may take the approval: the request lives in the backend's store.
    const approved = await as(
      'operator-bob',
      'POST',
      `${narrow.url}/v1/revocations/${requestId}/approve`,
    );
    expect(approved).toEqual({
      status: 200,
      body: {
        revokedToken: token,
        newTokenFloor: expect.stringMatching(/^[1-9][0-9]*$/),
        revocationId: expect.any(String),
        requestId,
      },
    });
    expect(BigInt(approved.body.newTokenFloor)).toBeGreaterThan(BigInt(token));
    expect((await holder(wide, key)).held).toBe(false);
    const list = await as('operator-x', 'GET', `${wide.url}/v1/revocations`);
    expect(list.body.items).toContainEqual(
      expect.objectContaining({ key, revokedToken: token, operator: 'operator-alice' }),
    );
    // A request is used once.
    const again = await as(
      'operator-carol',
      'POST',
      `${wide.url}/v1/revocations/${requestId}/approve`,
    );
    expect(again).toEqual({
      status: 409,
      body: {
        code: 'REVOCATION_ALREADY_APPROVED',
        message: 'the request was already approved',
        retrySafe: false,
        traceId: TRACE_ID,
      },
    });
    if (backend.name === 'pg') {
      const rows = await withClient(
        backendEnv.LOCKDB_URL,
        async (c) =>
          (
            await c.query(
              'SELECT requested_by, approved_by FROM lock_revocation_request WHERE request_id = $1',
              [requestId],
            )
          ).rows,
      );
      expect(rows).toEqual([{ requested_by: 'operator-alice', approved_by: 'operator-bob' }]);
    }
  });

  it('the operator who asked cannot approve: 403, the lock stays held', async () => {
    const { key, token } = await heldKey(wide);
    const requested = await as(
      'operator-alice',
      'POST',
      `${wide.url}/v1/locks/${key}/revoke`,
      revokeBody,
    );
    const self = await as(
      'operator-alice',
      'POST',
      `${wide.url}/v1/revocations/${requested.body.requestId as string}/approve`,
    );
    expect(self).toEqual({
      status: 403,
      body: {
        code: 'FORBIDDEN',
        message: 'a revocation must be approved by a different operator',
        retrySafe: false,
        details: { reason: 'self-approval' },
        traceId: TRACE_ID,
      },
    });
    expect(await holder(wide, key)).toEqual({ held: true, token });
  });

  it('an approval after the window is 410, the lock stays held', async () => {
    const { key, token } = await heldKey(narrow);
    const requested = await as(
      'operator-alice',
      'POST',
      `${narrow.url}/v1/locks/${key}/revoke`,
      revokeBody,
    );
    expect(requested.status).toBe(202);
    await sleep(1_500);
    const late = await as(
      'operator-bob',
      'POST',
      `${wide.url}/v1/revocations/${requested.body.requestId as string}/approve`,
    );
    expect(late).toEqual({
      status: 410,
      body: {
        code: 'REVOCATION_REQUEST_EXPIRED',
        message: 'the approval window of this request has closed: request the revoke again',
        retrySafe: false,
        traceId: TRACE_ID,
      },
    });
    expect(await holder(wide, key)).toEqual({ held: true, token });
  });

  it('an unknown request is 404; a request for a free key is 404 and files nothing', async () => {
    const unknown = await as(
      'operator-bob',
      'POST',
      `${wide.url}/v1/revocations/0f6b6a8e-9d7e-4d0b-8d7e-2b1a3f4c5d6e/approve`,
    );
    expect(unknown).toEqual({
      status: 404,
      body: {
        code: 'NOT_FOUND',
        message: 'no such revocation request',
        retrySafe: false,
        traceId: TRACE_ID,
      },
    });
    const { key } = await heldKey(wide);
    const free = await as(
      'operator-alice',
      'POST',
      `${wide.url}/v1/locks/${key}x/revoke`,
      revokeBody,
    );
    expect(free.status).toBe(404);
  });

  it('a worker may neither request nor approve', async () => {
    const { key } = await heldKey(wide);
    const requested = await as(
      'worker-1',
      'POST',
      `${wide.url}/v1/locks/${key}/revoke`,
      revokeBody,
    );
    expect(requested.status).toBe(403);
    expect(requested.body.details).toEqual({ reason: 'policy', operation: 'locks.revoke' });
  });
});
