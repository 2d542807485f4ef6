/**
 * The floor under any HTTP lock-server on this machine, for bench:lock
 * (bench/reports/lock-server-pg.md, "The floor"): node:http and nothing else,
 * answering the three routes the bench calls with the same prepared statements
 * as the real one, an Ed25519-signed proof per grant and a JSON body. It does
 * the least a lock-server must do per request and skips the rest: a bearer
 * token must be present but is not verified (the real one verifies it once,
 * then hits a map), a release's proof is checked against the proofs it signed (the real
 * one's verifier cache), no validation beyond what the statements need, no
 * guards, logs, metrics, traces or error envelope. Not a server to run: a
 * measuring stick. Started by bench.ts with LOCKDB_URL and PORT.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import http from 'node:http';
import { Pool } from 'pg';
import { preparedStatement } from '../../libs/persistence/src/prepared';
import {
  ACQUIRE_SQL,
  OPEN_SESSION_SQL,
  RELEASE_SQL,
} from '../../apps/lock-server/src/locks/persistence/pg/pg-locks.sql';

const pool = new Pool({
  connectionString: process.env.LOCKDB_URL,
  max: Number(process.env.LOCKDB_POOL_MAX ?? 20),
});
const { privateKey } = generateKeyPairSync('ed25519');
const PROOF_HEADER = Buffer.from('{"alg":"EdDSA","typ":"dlock-grant+jwt"}').toString('base64url');
/** Proofs signed and not yet released; bounded by the bench's keys in flight. */
const proofs = new Set<string>();

function signProof(claims: object): string {
  const input = `${PROOF_HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
}

function answer(res: http.ServerResponse, status: number, body?: object): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  const text = JSON.stringify(body);
  res
    .writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    })
    .end(text);
}

async function acquire(key: string, owner: string, body: Record<string, unknown>) {
  const r = await pool.query(
    preparedStatement(ACQUIRE_SQL, [key, body.sessionId, owner, body.ttlMillis]),
  );
  const row = r.rows[0] as Record<string, string | Date>;
  if (row.outcome !== 'granted') return { status: 409, body: { code: 'LOCK_CONTENDED' } };
  const acquiredAt = (row.acquired_at as Date).toISOString();
  const proof = signProof({
    key,
    tok: row.fencing_token,
    sub: owner,
    sid: row.session_id,
    iat: Math.floor(Date.parse(acquiredAt) / 1000),
  });
  proofs.add(proof);
  return {
    status: 200,
    body: {
      key,
      ownerId: owner,
      sessionId: row.session_id,
      fencingToken: row.fencing_token,
      acquiredAt,
      expiresAt: (row.expires_at as Date).toISOString(),
      grantProof: proof,
    },
  };
}

async function release(key: string, token: string, proof: string) {
  if (!proofs.delete(proof)) return { status: 403, body: { code: 'PROOF_REJECTED' } };
  const r = await pool.query(preparedStatement(RELEASE_SQL, [key, token]));
  return r.rowCount === 1 ? { status: 204 } : { status: 409, body: { code: 'LOCK_LOST' } };
}

async function route(req: http.IncomingMessage, text: string) {
  const url = req.url ?? '';
  const lock = /^\/v1\/locks\/([^/?]+)(\/acquire)?/.exec(url);
  const owner = String(req.headers['x-owner-id'] ?? '');
  if (req.method === 'GET' && url === '/health/ready') return { status: 200, body: {} };
  if (!String(req.headers.authorization ?? '').startsWith('Bearer '))
    return { status: 401, body: { code: 'UNAUTHENTICATED' } };
  const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (req.method === 'POST' && url === '/v1/sessions') {
    const r = await pool.query(preparedStatement(OPEN_SESSION_SQL, [body.ownerId, body.ttlMillis]));
    return { status: 201, body: { sessionId: (r.rows[0] as { session_id: string }).session_id } };
  }
  if (req.method === 'POST' && lock?.[2]) return acquire(decodeURIComponent(lock[1]), owner, body);
  if (req.method === 'DELETE' && lock) {
    const token = String(req.headers['x-fencing-token'] ?? '');
    return release(decodeURIComponent(lock[1]), token, String(req.headers['x-grant-proof']));
  }
  return { status: 404, body: { code: 'NOT_FOUND' } };
}

const server = http.createServer((req, res) => {
  let text = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (text += chunk));
  req.on('end', () => {
    route(req, text).then(
      (out) => answer(res, out.status, out.body),
      (err: unknown) => answer(res, 500, { code: 'INTERNAL', message: String(err) }),
    );
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end().then(() => process.exit(0));
});
