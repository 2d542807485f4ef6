import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { DataSource, QueryFailedError, type MigrationInterface, type QueryRunner } from 'typeorm';
import { MIGRATIONS, type DatabaseName } from '../../../../migrations';
import { SIM_EPOCH_MS } from './scheduler.sim';

/** The databases this process opened (or is opening), by name. */
const opened = new Map<DatabaseName, Promise<SimDatabase>>();

/**
 * A guard's database in the simulation: the real schema (migrations/) and the
 * real statements on PGlite, PostgreSQL compiled to WebAssembly, in process
 * (docs/harness.md, "Deterministic simulation"). The database's clock is the
 * simulation's: `now()` and `clock_timestamp()` resolve to functions in the
 * `sim` schema that read the virtual instant set before each statement, so
 * the production SQL runs unchanged. One connection: a transaction holds it
 * until it ends, and every other statement waits its turn, in FIFO order.
 */
export class SimDatabase {
  private holder: Promise<void> = Promise.resolve();
  private clockMs = -1;
  private baseline: string[] = [];
  statements = 0;

  private constructor(
    private readonly pg: PGlite,
    private readonly tables: string[],
    /** The virtual time the next statement runs at. */
    private now: () => number,
  ) {}

  /**
   * The process's migrated database of that name, reset to `now`'s clock:
   * PGlite boots once per process (seconds), a reset per seed is a TRUNCATE.
   * Open until closeSimDatabases.
   */
  static async shared(name: DatabaseName, now: () => number): Promise<SimDatabase> {
    let opening = opened.get(name);
    if (opening === undefined) {
      opening = SimDatabase.open(name);
      opened.set(name, opening);
    }
    const db = await opening;
    await db.reset(now);
    return db;
  }

  private static async open(name: DatabaseName): Promise<SimDatabase> {
    const pg = await migrated(name);
    try {
      const tables = (
        await pg.query<{ t: string }>(
          `SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
        )
      ).rows.map((r) => r.t);
      const db = new SimDatabase(pg, tables, () => 0);
      await db.snapshot();
      return db;
    } catch (err) {
      await pg.close();
      throw err;
    }
  }

  close(): Promise<void> {
    return this.pg.close();
  }

  /** What the migrations left in the tables, restored by every reset. */
  private async snapshot(): Promise<void> {
    for (const t of this.tables) {
      const { rows } = await this.pg.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${t}`);
      if (rows[0].n === '0') continue;
      await this.pg.exec(`CREATE TABLE sim.base_${t} AS SELECT * FROM ${t}`);
      this.baseline.push(t);
    }
  }

  /** Back to the freshly migrated state, sequences too, on the given clock. */
  async reset(now: () => number): Promise<void> {
    await this.holder;
    this.now = now;
    this.clockMs = -1;
    this.statements = 0;
    // The append-only tables refuse a TRUNCATE (allowResets lets this one through);
    // the baseline goes back in without firing a trigger.
    await this.pg.exec(`SELECT set_config('sim.resetting', 'on', false)`);
    await this.pg.exec(`TRUNCATE ${this.tables.join(', ')} RESTART IDENTITY CASCADE`);
    await this.pg.exec(`SELECT set_config('sim.resetting', 'off', false)`);
    await this.pg.exec(`SET session_replication_role = replica`);
    for (const t of this.baseline)
      await this.pg.exec(`INSERT INTO ${t} SELECT * FROM sim.base_${t}`);
    await this.pg.exec(`SET session_replication_role = origin`);
    const seqs = await this.pg.query<{ s: string }>(
      `SELECT format('%I.%I', schemaname, sequencename) AS s FROM pg_sequences WHERE schemaname = 'public'`,
    );
    for (const { s } of seqs.rows) await this.pg.query(`SELECT setval($1, 1, false)`, [s]);
  }

  /** Takes the connection: resolves with its release once every earlier holder released it. */
  async acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const before = this.holder;
    this.holder = before.then(() => held);
    await before;
    return release;
  }

  /** One statement on the held connection, as pg's client answers it. */
  async run(sql: string, params: readonly unknown[] = []): Promise<PgResult> {
    const at = this.now();
    if (at !== this.clockMs) {
      await this.pg.query(`SELECT set_config('sim.now', $1, false)`, [
        new Date(SIM_EPOCH_MS + at).toISOString(),
      ]);
      this.clockMs = at;
    }
    this.statements++;
    try {
      const r = await this.pg.query<Record<string, unknown>>(sql, params.map(param));
      return { command: commandOf(sql), rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
    } catch (err) {
      throw err instanceof Error ? new QueryFailedError(sql, [...params], err) : err;
    }
  }

  /** A DataSource over this database, as the services and repositories use one. */
  dataSource(): DataSource {
    return simDataSource(this);
  }
}

/**
 * Closes every database this process opened, whatever became of its opening:
 * an open PGlite keeps the process alive (its timers).
 */
export async function closeSimDatabases(): Promise<void> {
  const all = [...opened.values()];
  opened.clear();
  const dbs = await Promise.allSettled(all);
  for (const r of dbs) if (r.status === 'fulfilled') await r.value.close();
}

/** pg's shapes (what the repositories parse): int8 and numeric as text. */
const PARSERS = { 20: (v: string) => v, 1700: (v: string) => v };

/** A data directory is only loaded by the PGlite that wrote it. */
const PGLITE_VERSION = (
  JSON.parse(
    readFileSync(
      join(dirname(require.resolve('@electric-sql/pglite')), '..', 'package.json'),
      'utf8',
    ),
  ) as { version: string }
).version;

/**
 * The migrated database: PGlite's initdb takes seconds, so the migrated data
 * directory is kept in the system's temp directory, keyed by the migrations
 * and PGlite's version, and loaded from there by later processes.
 */
async function migrated(name: DatabaseName): Promise<PGlite> {
  const migrations = MIGRATIONS[name] as (new () => MigrationInterface)[];
  const key = createHash('sha256')
    .update(JSON.stringify([PGLITE_VERSION, name, migrations.map((m) => m.name)]))
    .digest('hex')
    .slice(0, 16);
  const file = join(tmpdir(), `dlock-sim-${name}-${key}.tar.gz`);
  if (existsSync(file)) {
    const loadDataDir = new Blob([readFileSync(file)]);
    return PGlite.create({ loadDataDir, parsers: PARSERS });
  }
  const pg = await PGlite.create({ parsers: PARSERS });
  try {
    await migrate(pg, migrations);
    await keep(pg, file);
    return pg;
  } catch (err) {
    await pg.close();
    throw err;
  }
}

/** The sim schema, then the app's migrations, then the resets' bypass. */
async function migrate(pg: PGlite, migrations: (new () => MigrationInterface)[]): Promise<void> {
  await pg.exec(`
    CREATE SCHEMA sim;
    CREATE FUNCTION sim.now() RETURNS timestamptz LANGUAGE sql STABLE
      AS $$ SELECT current_setting('sim.now')::timestamptz $$;
    CREATE FUNCTION sim.clock_timestamp() RETURNS timestamptz LANGUAGE sql STABLE
      AS $$ SELECT current_setting('sim.now')::timestamptz $$;
    ALTER DATABASE postgres SET search_path = public, sim, pg_catalog;
    ALTER DATABASE postgres SET sim.now = '${new Date(SIM_EPOCH_MS).toISOString()}';
    SET search_path = public, sim, pg_catalog;`);
  await pg.exec(`SET sim.now = '${new Date(SIM_EPOCH_MS).toISOString()}'`);
  const runner = { query: (sql: string, params?: unknown[]) => pg.query(sql, params ?? []) };
  for (const M of migrations) {
    await pg.exec('BEGIN');
    await new M().up(runner as unknown as QueryRunner);
    await pg.exec('COMMIT');
  }
  await allowResets(pg);
}

/** The migrated data directory, kept for later processes (written whole, then renamed). */
async function keep(pg: PGlite, file: string): Promise<void> {
  const dump = await pg.dumpDataDir('gzip');
  const partial = `${file}.${process.pid}`;
  writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
  renameSync(partial, file);
}

/**
 * The functions of the triggers that refuse a TRUNCATE (the append-only
 * records) let the simulation's reset through, and only it: their body first
 * returns when `sim.resetting` is on, which nothing but SimDatabase.reset sets.
 */
async function allowResets(pg: PGlite): Promise<void> {
  const { rows } = await pg.query<{ def: string }>(
    `SELECT DISTINCT pg_get_functiondef(t.tgfoid) AS def FROM pg_trigger t
      WHERE NOT t.tgisinternal AND (t.tgtype & 32) <> 0`,
  );
  const bypass = `BEGIN IF current_setting('sim.resetting', true) = 'on' THEN RETURN NULL; END IF;`;
  for (const { def } of rows) {
    const body = def.indexOf('$function$');
    const begin = def.slice(body).search(/\bBEGIN\b/i) + body;
    await pg.exec(`${def.slice(0, begin)}${bypass}${def.slice(begin + 'BEGIN'.length)}`);
  }
}

export interface PgResult {
  command: string;
  rows: Record<string, unknown>[];
  rowCount: number;
}

/** pg's parameter conversions PGlite does not make. */
function param(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  return v;
}

/** The statement's command tag: the first top-level verb after any WITH list. */
export function commandOf(sql: string): string {
  let depth = 0;
  for (const m of sql.matchAll(/[()]|\b(SELECT|INSERT|UPDATE|DELETE|VALUES)\b/gi)) {
    if (m[0] === '(') depth++;
    else if (m[0] === ')') depth--;
    else if (depth === 0) return m[0].toUpperCase();
  }
  return 'OTHER';
}

/** What pg's PoolClient offers sqlRows (libs/persistence), on the held connection. */
class SimClient {
  constructor(private readonly db: SimDatabase) {}

  query(config: string | { text: string; values?: unknown[] }, values?: unknown[]) {
    return typeof config === 'string'
      ? this.db.run(config, values)
      : this.db.run(config.text, config.values);
  }
}

/** EntityManager.query's shapes (TypeORM's postgres driver): rows, or [rows, count] for UPDATE/DELETE. */
function managerQuery(db: SimDatabase, sql: string, params?: unknown[]): Promise<unknown> {
  return db
    .run(sql, params)
    .then((r) =>
      r.command === 'UPDATE' || r.command === 'DELETE' ? [r.rows, r.rowCount] : r.rows,
    );
}

class SimQueryRunner {
  isTransactionActive = false;
  isReleased = false;
  private held: (() => void) | null = null;
  readonly manager: object;

  constructor(
    private readonly db: SimDatabase,
    readonly connection: DataSource,
  ) {
    this.manager = {
      queryRunner: this,
      connection,
      query: (s: string, p?: unknown[]) => this.query(s, p),
    };
  }

  async connect(): Promise<SimClient> {
    this.held ??= await this.db.acquire();
    return new SimClient(this.db);
  }

  async query(sql: string, params?: unknown[]): Promise<unknown> {
    await this.connect();
    return managerQuery(this.db, sql, params);
  }

  async startTransaction(): Promise<void> {
    await this.query('BEGIN');
    this.isTransactionActive = true;
  }

  async commitTransaction(): Promise<void> {
    await this.query('COMMIT');
    this.isTransactionActive = false;
  }

  async rollbackTransaction(): Promise<void> {
    await this.query('ROLLBACK');
    this.isTransactionActive = false;
  }

  async release(): Promise<void> {
    if (this.isTransactionActive) await this.rollbackTransaction();
    this.held?.();
    this.held = null;
    this.isReleased = true;
  }
}

/**
 * The part of TypeORM's DataSource dlock's paydb and proxydb code calls:
 * `manager.query`, `createQueryRunner` and `transaction`. Its prototype is
 * DataSource's, for the code that tells a DataSource from a manager.
 */
function simDataSource(db: SimDatabase): DataSource {
  const ds = Object.create(DataSource.prototype) as DataSource;
  const runner = () => new SimQueryRunner(db, ds);
  const autocommit = async <T>(fn: (r: SimQueryRunner) => Promise<T>): Promise<T> => {
    const r = runner();
    try {
      return await fn(r);
    } finally {
      await r.release();
    }
  };
  Object.defineProperties(ds, {
    isInitialized: { value: true },
    options: { value: { type: 'postgres' } },
    manager: {
      value: {
        connection: ds,
        query: (sql: string, params?: unknown[]) => autocommit((r) => r.query(sql, params)),
      },
    },
    createQueryRunner: { value: runner },
    // A seed's modules close theirs at the end; the database is the process's (closeSimDatabases).
    destroy: { value: () => Promise.resolve() },
    transaction: {
      value: <T>(fn: (m: unknown) => Promise<T>) =>
        autocommit(async (r) => {
          await r.startTransaction();
          const out = await fn(r.manager);
          await r.commitTransaction();
          return out;
        }),
    },
  });
  return ds;
}
