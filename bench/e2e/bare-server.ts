/**
 * One process of the bare payout (bare-payout.ts): the lock-server, the
 * payment-resource, the rail-proxy or the rail stub (BARE_APP) as a node:http
 * server and nothing else. A hop's request names the hop and carries the
 * payout's substitution; the server does the hop's Ed25519 verifications, runs
 * its recorded statements on a pg pool (the rail-proxy calls the rail between
 * them, over a fresh connection, as the real one does: docs/rail.md), signs,
 * and answers the substitution as it now stands.
 *
 * Started by bench/e2e/bench.ts with BARE_APP, PORT, BARE_TEMPLATE (the
 * template as JSON), BARE_DATABASES (JSON: database prefix → URL) and, for the
 * rail-proxy, BARE_RAIL_URL.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID, sign, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { Pool } from 'pg';
import { hopsOf, postJson, type HopMessage } from './bare-payout';
import { Substitution, type Template } from './raw-payout';

const APP = process.env.BARE_APP ?? '';
const PORT = Number(process.env.PORT ?? 0);
const BODY_MAX_BYTES = 256 * 1024;
/** As many connections as the services' pools (LOCKDB_POOL_MAX and the others: 20). */
const POOL_MAX = 20;

/** A grant proof's size, about: what is signed and verified. */
const SIGNED = Buffer.alloc(200, 7);
const keys = generateKeyPairSync('ed25519');
const SIGNATURE = sign(null, SIGNED, keys.privateKey);

function loadTemplate(): Template {
  const raw = JSON.parse(readFileSync(process.env.BARE_TEMPLATE ?? '', 'utf8')) as Omit<
    Template,
    'shared'
  > & { shared: string[] };
  return { ...raw, shared: new Set(raw.shared) };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > BODY_MAX_BYTES) req.destroy(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(data),
  });
  res.end(data);
}

/** The rail: accepts every submission. */
function railStub(): http.Server {
  return http.createServer((req, res) => {
    if (req.url === '/health/live') return reply(res, 200, { status: 'ok' });
    readBody(req).then(
      () => reply(res, 200, { railReference: `rr-${randomUUID()}`, acceptedAt: new Date() }),
      (err: Error) => reply(res, 400, { error: err.message }),
    );
  });
}

/** A lock-server, payment-resource or rail-proxy: hops of the template, on its database. */
function hopServer(): { server: http.Server; stop: () => Promise<void> } {
  const template = loadTemplate();
  const hops = hopsOf(template);
  const urls = JSON.parse(process.env.BARE_DATABASES ?? '{}') as Record<string, string>;
  const ours = hops.filter((h) => h.app === APP);
  assert.ok(ours.length > 0, `no hop of the payout is ${APP}'s`);
  const db = template.statements[ours[0].statements[0]].db;
  const url = Object.entries(urls).find(([prefix]) => db.startsWith(prefix))?.[1];
  assert.ok(url, `no database for ${db}`);
  const pool = new Pool({ connectionString: url, max: POOL_MAX });

  /** Statements on one connection: a transaction among them stays on it. */
  async function run(sub: Substitution, indices: number[]): Promise<void> {
    if (indices.length === 0) return;
    const client = await pool.connect();
    try {
      for (const i of indices) {
        const s = template.statements[i];
        const values = sub.params(s.values);
        const res = await client.query(
          s.name ? { name: s.name, text: s.text, values } : { text: s.text, values },
        );
        sub.learn(s, res);
      }
    } finally {
      client.release();
    }
  }

  async function answer(m: HopMessage): Promise<HopMessage> {
    const hop = hops[m.hop];
    assert.equal(hop?.app, APP, `hop ${m.hop} is not ${APP}'s`);
    for (let i = 0; i < hop.verifies; i++) {
      assert.ok(verify(null, SIGNED, keys.publicKey, SIGNATURE));
    }
    const sub = Substitution.restored(template, m.state);
    const at = hop.railAfter ?? hop.statements.length;
    await run(sub, hop.statements.slice(0, at));
    if (hop.railAfter !== null) {
      await postJson(`${process.env.BARE_RAIL_URL}/submit`, { clientRef: randomUUID() }, true);
    }
    await run(sub, hop.statements.slice(at));
    for (let i = 0; i < hop.signs; i++) sign(null, SIGNED, keys.privateKey);
    return { hop: m.hop, state: sub.state() };
  }

  const server = http.createServer((req, res) => {
    if (req.url === '/health/live') return reply(res, 200, { status: 'ok' });
    readBody(req)
      .then((text) => answer(JSON.parse(text) as HopMessage))
      .then(
        (body) => reply(res, 200, body),
        (err: Error) => reply(res, 500, { error: err.message }),
      );
  });
  return { server, stop: () => pool.end() };
}

function main(): void {
  const { server, stop } =
    APP === 'rail-stub' ? { server: railStub(), stop: async () => undefined } : hopServer();
  server.keepAliveTimeout = 60_000;
  server.listen(PORT, '127.0.0.1');
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void stop().finally(() => process.exit(0));
  });
}

main();
