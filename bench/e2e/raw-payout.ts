/**
 * The raw payout baseline of bench:e2e (issue 28): the SQL statements one
 * payout runs — lock, fence, transitions, ledger, proxy intent and outcome —
 * recorded from the real services (sql-recorder.cjs) and replayed by a lean
 * client, statement after statement on the same prepared names and the same
 * connections' split, no HTTP, no Nest. It is the physical limit the e2e
 * payouts/s is reported as a share of.
 *
 * Each replayed payout is a fresh PENDING payout on its lane's own account:
 * the recorded payout and account ids are replaced by the new ones, every
 * other id minted for that one payout by a fresh one, and values the database
 * answered (fencing tokens, ids, versions, times) by what it answers now. The
 * replay counts as done only when its payouts reach POSTED.
 */
import { readFileSync } from 'node:fs';
import { Client, type QueryResult } from 'pg';
import { rowId } from '../../libs/persistence/src/row-id';

export interface Recorded {
  t: number;
  app: string;
  conn: string;
  db: string;
  name?: string;
  text: string;
  values: unknown[];
  row?: Record<string, unknown>;
  error?: string;
}

/** The statements of one payout, in the order they were sent. */
export interface Template {
  payoutId: string;
  accountId: string;
  statements: Recorded[];
  /** Ids in it that are not the payout's own (a session, an owner): kept as they are. */
  shared: ReadonlySet<string>;
  transactions: number;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** Columns whose answered value a later statement may send back. */
const ECHOED = /token|fence|version|id$|_at$/i;

const scalar = (v: unknown): v is string | number | boolean =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

const strings = (v: unknown): string[] =>
  typeof v === 'string' ? [v] : Array.isArray(v) ? v.flatMap(strings) : [];

const isBegin = (s: Recorded) => /^\s*(BEGIN|START TRANSACTION)/i.test(s.text);
const isEnd = (s: Recorded) => /^\s*(COMMIT|ROLLBACK)/i.test(s.text);

/** Statements grouped as sent on each connection: a transaction, or one statement alone. */
export function units(recorded: Recorded[]): Recorded[][] {
  const open = new Map<string, Recorded[]>();
  const out: Recorded[][] = [];
  for (const s of recorded) {
    const tx = open.get(s.conn);
    if (tx) {
      tx.push(s);
      if (isEnd(s)) open.delete(s.conn);
    } else if (isBegin(s)) {
      const unit = [s];
      open.set(s.conn, unit);
      out.push(unit);
    } else {
      out.push([s]);
    }
  }
  return out;
}

const mentions = (unit: Recorded[], needle: string) =>
  unit.some((s) => s.values.some((v) => strings(v).some((x) => x.includes(needle))));

/**
 * The statements of each recorded payout (those that name its payout or its
 * account: the executor's polling and the session's heartbeats are shared),
 * from a recording of payouts on accounts of their own.
 */
export function templates(file: string, payouts: { payoutId: string; accountId: string }[]) {
  const recorded = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Recorded)
    .sort((a, b) => a.t - b.t);
  const all = units(recorded);
  const perPayout = payouts.map((p) =>
    all.filter((u) => mentions(u, p.payoutId) || mentions(u, p.accountId)),
  );
  const uuidsOf = (us: Recorded[][]) =>
    new Set(
      us.flat().flatMap((s) => s.values.flatMap(strings).flatMap((x) => x.match(UUID) ?? [])),
    );
  const seen = perPayout.map(uuidsOf);
  return payouts.map((p, i): Template => {
    const shared = new Set(
      [...seen[i]].filter((u) => seen.some((other, j) => j !== i && other.has(u))),
    );
    return {
      ...p,
      statements: perPayout[i].flat(),
      shared,
      transactions: perPayout[i].filter((u) => u.length > 1).length,
    };
  });
}

/** A Substitution as JSON: the bare payout hands it from hop to hop (bare-payout.ts). */
export interface SubstitutionState {
  accountId: string;
  ids: [string, string][];
  answered: [string, unknown][];
}

/** Per replayed payout: what each recorded value becomes. */
export class Substitution {
  private readonly ids = new Map<string, string>();
  private readonly answered = new Map<string, unknown>();

  static restored(t: Template, state: SubstitutionState): Substitution {
    const sub = new Substitution(t, '', state.accountId);
    sub.ids.clear();
    for (const [k, v] of state.ids) sub.ids.set(k, v);
    for (const [k, v] of state.answered) sub.answered.set(k, v);
    return sub;
  }

  state(): SubstitutionState {
    return { accountId: this.accountId, ids: [...this.ids], answered: [...this.answered] };
  }

  constructor(
    private readonly t: Template,
    payoutId: string,
    private readonly accountId: string,
  ) {
    this.ids.set(t.payoutId.toLowerCase(), payoutId);
  }

  params(values: unknown[]): unknown[] {
    return values.map((v) => this.value(v));
  }

  private value(v: unknown): unknown {
    if (Array.isArray(v)) return v.map((x) => this.value(x));
    const key = typeof v === 'number' ? String(v) : v;
    if (typeof key === 'string' && this.answered.has(key)) return this.answered.get(key);
    if (typeof v !== 'string') return v;
    return v
      .split(this.t.accountId)
      .join(this.accountId)
      .replace(UUID, (u) => this.id(u));
  }

  private id(u: string): string {
    const k = u.toLowerCase();
    if (this.t.shared.has(u)) return u;
    let mapped = this.ids.get(k);
    if (mapped === undefined) {
      mapped = rowId();
      this.ids.set(k, mapped);
    }
    return mapped;
  }

  /** What the database answered now in place of what it answered when recorded. */
  learn(recorded: Recorded, now: Pick<QueryResult, 'rows'>): void {
    const row = now.rows[0] as Record<string, unknown> | undefined;
    if (!recorded.row || !row) return;
    for (const [col, was] of Object.entries(recorded.row)) {
      const now = row[col];
      const is = now instanceof Date ? now.toISOString() : now;
      // A column empty now (another branch of a CASE) says nothing about the value it had.
      if (!ECHOED.test(col) || !scalar(was) || !scalar(is) || String(was) === String(is)) {
        continue;
      }
      this.answered.set(String(was), is);
    }
  }
}

/** The lock session the recorded payout held its lock in: [session id, owner]. */
export function sessionOf(t: Template): [string, string] {
  for (const st of t.statements) {
    const r = st.row;
    if (typeof r?.session_id === 'string' && typeof r.owner_id === 'string') {
      return [r.session_id, r.owner_id];
    }
  }
  throw new Error('raw payout: the recording holds no lock session');
}

export interface Lane {
  /** The lane's own accounts, with the PENDING payouts seeded on them. */
  payouts: { payoutId: string; accountId: string }[];
}

/**
 * One lane: its payouts one after another, one client per recorded connection,
 * left open in `clients` (the caller reads the backends' CPU time, then ends them).
 */
export async function replayLane(
  t: Template,
  lane: Lane,
  urls: Record<string, string>,
  clients: Map<string, Client>,
): Promise<void> {
  const client = async (s: Recorded): Promise<Client> => {
    let c = clients.get(s.conn);
    if (!c) {
      const url = Object.entries(urls).find(([prefix]) => s.db.startsWith(prefix))?.[1];
      if (!url) throw new Error(`raw payout: no database for ${s.db}`);
      c = new Client({ connectionString: url });
      clients.set(s.conn, c);
      await c.connect();
    }
    return c;
  };
  for (const p of lane.payouts) {
    const sub = new Substitution(t, p.payoutId, p.accountId);
    for (const s of t.statements) {
      const c = await client(s);
      const values = sub.params(s.values);
      const res = await c
        .query(s.name ? { name: s.name, text: s.text, values } : { text: s.text, values })
        .catch((err: Error) => {
          throw new Error(`raw payout: ${s.text.slice(0, 60)}… failed: ${err.message}`);
        });
      sub.learn(s, res);
    }
  }
}
