/**
 * Preloaded (`--require`) into a service by bench:e2e's recording run, never in
 * production: every statement the process sends through `pg` is appended to
 * BENCH_SQL_RECORD as one JSON line (database, connection, prepared name, text,
 * parameters, first row of its answer), so the raw payout baseline replays the
 * very statements one payout runs (bench/e2e/raw-payout.ts).
 */
'use strict';
const fs = require('node:fs');
const { Client } = require('pg');

const file = process.env.BENCH_SQL_RECORD;
if (file) {
  const fd = fs.openSync(file, 'a');
  const app = process.env.BENCH_SQL_APP ?? String(process.pid);
  const ids = new WeakMap();
  let nextId = 0;
  const plain = (v) =>
    v instanceof Date ? v.toISOString() : typeof v === 'bigint' ? String(v) : v;
  const row = (r) =>
    r && r.rows && r.rows[0] && typeof r.rows[0] === 'object' && !Array.isArray(r.rows[0])
      ? Object.fromEntries(Object.entries(r.rows[0]).map(([k, v]) => [k, plain(v)]))
      : undefined;
  const write = (rec, result, err) => {
    rec.command = result?.command;
    rec.rowCount = result?.rowCount;
    rec.row = row(result);
    if (err) rec.error = String(err.message ?? err);
    fs.writeSync(fd, `${JSON.stringify(rec)}\n`);
  };
  const original = Client.prototype.query;
  Client.prototype.query = function recordedQuery(config, values, callback) {
    if (config === null || config === undefined || typeof config.submit === 'function') {
      return original.apply(this, arguments);
    }
    if (!ids.has(this)) ids.set(this, `${app}:${nextId++}`);
    const text = typeof config === 'string' ? config : config.text;
    const params = typeof config === 'string' || Array.isArray(values) ? values : config.values;
    const rec = {
      t: Number(process.hrtime.bigint()),
      app,
      conn: ids.get(this),
      db: this.database,
      name: typeof config === 'object' ? config.name : undefined,
      text,
      values: (params ?? []).map(plain),
    };
    const args = [...arguments];
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const cb = args[last];
      args[last] = (err, res) => {
        write(rec, res, err);
        cb(err, res);
      };
      return original.apply(this, args);
    }
    const ret = original.apply(this, args);
    if (ret && typeof ret.then === 'function') {
      ret.then(
        (r) => write(rec, r),
        (e) => write(rec, undefined, e),
      );
    }
    return ret;
  };
}
