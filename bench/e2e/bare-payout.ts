/**
 * The bare payout of bench:e2e (issue 28): what this architecture costs with no
 * framework at all. The raw payout (raw-payout.ts) sends one payout's
 * statements from one lean client; the bare payout sends them through the
 * same hops as a real payout — executor → lock-server, payment-resource,
 * rail-proxy (→ rail stub over a fresh connection) — each answered by a
 * node:http process of its own (bare-server.ts) that runs the hop's recorded
 * statements on a pg pool and does the hop's Ed25519 work (the grant
 * signature, the proof and instruction verifications). No Nest, no express, no
 * guards, validation, logging, metrics or tracing: a floor no build of these
 * services can go under, on this machine, with these hops.
 */
import http from 'node:http';
import {
  type Lane,
  type Recorded,
  Substitution,
  type SubstitutionState,
  type Template,
  units,
} from './raw-payout';

/** One request of a payout: the statements it runs, in order, and its signatures. */
export interface Hop {
  app: HopApp;
  /** Indices into the template's statements. */
  statements: number[];
  /** The rail-proxy calls the rail after this many of its statements; null: no rail call. */
  railAfter: number | null;
  /** Ed25519 signatures made and verified while answering. */
  signs: number;
  verifies: number;
}

export type HopApp = 'lock-server' | 'payment-resource' | 'rail-proxy';

/**
 * The requests of a steady-state payout as the executor sends them, and the
 * Ed25519 work of each (docs/security.md): the acquire signs the grant, the
 * claim verifies its proof, SUBMITTED signs the payout instruction, the proxy
 * verifies the proof and the instruction.
 */
const PAYOUT_HOPS: readonly { app: HopApp; signs: number; verifies: number }[] = [
  { app: 'lock-server', signs: 1, verifies: 0 }, // L4 acquire
  { app: 'payment-resource', signs: 0, verifies: 1 }, // P2 claim
  { app: 'payment-resource', signs: 1, verifies: 0 }, // P6 SUBMITTED
  { app: 'rail-proxy', signs: 0, verifies: 2 }, // submit (→ rail)
  { app: 'payment-resource', signs: 0, verifies: 0 }, // P6 ACKED
  { app: 'payment-resource', signs: 0, verifies: 0 }, // P3 post
  { app: 'lock-server', signs: 0, verifies: 0 }, // L6 release
];

const WRITE = /^\s*(WITH|UPDATE|INSERT|DELETE)\b/i;
const TX_EDGE = /^\s*(BEGIN|START TRANSACTION|COMMIT|ROLLBACK)\b/i;

/**
 * The template's statements cut into the payout's requests: a request ends
 * where the app changes, and a lock-server or payment-resource request also
 * after its write (a claim reads, then writes; SUBMITTED only writes). The
 * rail-proxy's statements are one request, the rail called after its first
 * unit (the reservation, committed before the rail: docs/rail.md). Throws when
 * the recording is not shaped like a steady-state payout.
 */
export function hopsOf(t: Pick<Template, 'statements'>): Hop[] {
  const index = new Map<Recorded, number>(t.statements.map((s, i) => [s, i]));
  const hops: { app: string; statements: number[]; railAfter: number | null; open: boolean }[] = [];
  for (const unit of units(t.statements)) {
    const app = unit[0].app;
    const last = hops.at(-1);
    const joins = last !== undefined && last.open && last.app === app;
    const hop = joins ? last : { app, statements: [], railAfter: null, open: true };
    if (!joins) hops.push(hop);
    if (app === 'rail-proxy' && hop.railAfter === null && joins) {
      hop.railAfter = hop.statements.length;
    }
    hop.statements.push(...unit.map((s) => index.get(s)!));
    const first = unit.find((s) => !TX_EDGE.test(s.text));
    if (app !== 'rail-proxy' && first !== undefined && WRITE.test(first.text)) hop.open = false;
  }
  const shape = hops.map((h) => h.app).join(' → ');
  const expected = PAYOUT_HOPS.map((h) => h.app).join(' → ');
  if (shape !== expected) {
    throw new Error(`bare payout: the recorded payout's requests are ${shape}, not ${expected}`);
  }
  return hops.map((h, i) => ({
    app: PAYOUT_HOPS[i].app,
    statements: h.statements,
    railAfter: h.app === 'rail-proxy' ? (h.railAfter ?? h.statements.length) : null,
    signs: PAYOUT_HOPS[i].signs,
    verifies: PAYOUT_HOPS[i].verifies,
  }));
}

/** One hop's request and answer: which hop, and the payout's substitution before and after it. */
export interface HopMessage {
  hop: number;
  state: SubstitutionState;
}

/** Kept-alive connections from the lanes to each bare server, as the executor keeps them. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** POST a JSON body, answer the JSON of a 200; kept alive unless `fresh` (the rail's way). */
export function postJson<T>(url: string, body: unknown, fresh = false): Promise<T> {
  const data = JSON.stringify(body);
  return new Promise<T>((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: fresh ? false : agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 200) resolve(JSON.parse(text) as T);
          else reject(new Error(`bare payout: ${url} answered ${res.statusCode}: ${text}`));
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`bare payout: ${url} timed out`)));
    req.on('error', reject);
    req.end(data);
  });
}

/**
 * One lane: its payouts one after another, every hop one request to its bare
 * server. The server substitutes each statement's values (raw-payout.ts), since
 * a statement may send back what the one before it in the same request answered.
 */
export async function bareLane(
  hops: Hop[],
  lane: Lane,
  urls: Record<HopApp, string>,
  t: Template,
): Promise<void> {
  for (const p of lane.payouts) {
    let state = new Substitution(t, p.payoutId, p.accountId).state();
    for (let hop = 0; hop < hops.length; hop++) {
      const message: HopMessage = { hop, state };
      state = (await postJson<HopMessage>(`${urls[hops[hop].app]}/hop`, message)).state;
    }
  }
}
