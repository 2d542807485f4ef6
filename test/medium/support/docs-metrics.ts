import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@dlock/testing';
import type { Exposition } from './scraped-series';

/**
 * The metric names, label names and label values the documentation mentions (README.md and
 * docs/*.md), as an operator copies them into a query. Read where the docs are explicit:
 * - a code span `name{label="value", other=a|b}` (also `label` alone, `=~`, `"a"|"b"`);
 * - a code span naming a metric by its form: a Prometheus suffix (`_total`, `_seconds`, …),
 *   or the first cell of a metrics table row (a row with a cell `counter`, `gauge`, …),
 *   whose labels cell may list values as "`label` = a, b, c";
 * - a table whose header cell is `name{label}`: each code span in that column is a value.
 * Fenced code blocks are left out: they are commands, run by test/medium/runbook.spec.ts.
 */
export interface Mention {
  where: string;
  metric: string;
  label?: string;
  value?: string;
}

const SUFFIXED = /_(total|seconds|bucket|count|sum|bytes|info|ratio)$/;
const METRIC_TYPES = new Set(['counter', 'gauge', 'histogram', 'summary']);
const SPAN = /^([a-z][a-z0-9_]*)(?:\{([^}]*)\})?$/;

/** Tables the migrations create: `payout_state_count` in a doc is a table, not a metric. */
function tableNames(): Set<string> {
  const names = new Set<string>();
  for (const db of ['lockdb', 'paydb', 'proxydb']) {
    const dir = path.join(REPO_ROOT, 'migrations', db);
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
      const sql = readFileSync(path.join(dir, f), 'utf8');
      for (const m of sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?([a-z_]+)"?/g))
        names.add(m[1]);
    }
  }
  return names;
}
const TABLES = tableNames();

export function docFiles(): string[] {
  const docs = readdirSync(path.join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** `label="v"`, `label=v1|v2`, `label="a"|"b"`, `label=~"a|b"` or a bare `label`, comma-separated. */
export function labelMentions(metric: string, body: string, where: string): Mention[] {
  const out: Mention[] = [];
  for (const part of body.split(',').map((p) => p.trim())) {
    if (part === '') continue;
    const m = /^([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:(=~|=)\s*(.+))?$/.exec(part);
    if (!m) continue;
    const [, label, , raw] = m;
    if (raw === undefined) {
      out.push({ where, metric, label });
      continue;
    }
    for (const v of raw.split('|').map((x) => x.trim().replace(/^"|"$/g, ''))) {
      if (v !== '') out.push({ where, metric, label, value: v });
    }
  }
  return out;
}

/** "`label` = a, b (note), c; more" → the values of `label`. */
function listedValues(metric: string, cell: string, where: string): Mention[] {
  const m = /^`([a-z_]+)` = ([^;]*)/.exec(cell.trim());
  if (!m) return [];
  const list = m[2].replace(/\([^)]*\)/g, '');
  return list
    .split(',')
    .map((v) => v.trim())
    .filter((v) => /^[a-z_]+$/.test(v))
    .map((value) => ({ where, metric, label: m[1], value }));
}

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|');
}

const spans = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]);

/** A table's rows (header first), each split in cells, with the line each starts on. */
function tables(lines: string[]): { start: number; rows: string[][] }[] {
  const out: { start: number; rows: string[][] }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].trimStart().startsWith('|') || !/^\s*\|[\s:|-]+\|\s*$/.test(lines[i + 1] ?? ''))
      continue;
    const rows = [cells(lines[i])];
    let j = i + 2;
    for (; j < lines.length && lines[j].trimStart().startsWith('|'); j++)
      rows.push(cells(lines[j]));
    out.push({ start: i + 1, rows });
    i = j - 1;
  }
  return out;
}

function tableMentions(file: string, lines: string[]): Mention[] {
  const out: Mention[] = [];
  for (const { start, rows } of tables(lines)) {
    const [header, ...body] = rows;
    header.forEach((h, col) => {
      const named = spans(h)
        .map((s) => SPAN.exec(s))
        .find((m) => m?.[2] !== undefined);
      if (!named) return;
      for (const [r, row] of body.entries()) {
        for (const value of spans(row[col] ?? ''))
          if (/^[a-z][a-z0-9_]*$/.test(value))
            out.push({
              where: `${file}:${start + 2 + r}`,
              metric: named[1],
              label: named[2],
              value,
            });
      }
    });
    for (const [r, row] of body.entries()) {
      if (!row.some((c) => METRIC_TYPES.has(c.trim()))) continue;
      const where = `${file}:${start + 2 + r}`;
      for (const s of spans(row[0])) {
        const m = SPAN.exec(s);
        if (!m) continue;
        out.push({ where, metric: m[1] });
        for (const c of row.slice(1)) out.push(...listedValues(m[1], c, where));
      }
    }
  }
  return out;
}

/** Every mention in one markdown file. */
export function mentionsIn(file: string): Mention[] {
  const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
  // Fenced blocks blanked line for line, so line numbers stay right.
  const prose = text.replace(/^[ \t]*```[\s\S]*?^[ \t]*```/gm, (block) =>
    block.replace(/[^\n]/g, ''),
  );
  const lines = prose.split('\n');
  const out = tableMentions(file, lines);
  for (const m of prose.matchAll(/`([^`]+)`/g)) {
    const span = SPAN.exec(m[1].replace(/\s+/g, ' ').replace(/\{ /, '{'));
    if (!span) continue;
    const [, metric, body] = span;
    if (body === undefined && (!SUFFIXED.test(metric) || TABLES.has(metric))) continue;
    const where = `${file}:${prose.slice(0, m.index).split('\n').length}`;
    out.push({ where, metric });
    if (body !== undefined) out.push(...labelMentions(metric, body, where));
  }
  return out;
}

/** Metric names and, per metric, label → values, as a running system exposes them. */
interface Exposed {
  names: Set<string>;
  labels: Map<string, Map<string, Set<string>>>;
}

function exposedIn(expositions: Iterable<Exposition>): Exposed {
  const names = new Set<string>();
  const labels = new Map<string, Map<string, Set<string>>>();
  for (const e of expositions) {
    for (const [name, type] of e.types) {
      names.add(name);
      if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    }
    for (const s of e.samples) {
      names.add(s.name);
      // A histogram's labels are read on its family name too (`payout_execute_seconds{outcome}`).
      for (const key of new Set([s.name, s.name.replace(/_(bucket|sum|count)$/, '')])) {
        const byLabel = labels.get(key) ?? new Map<string, Set<string>>();
        labels.set(key, byLabel);
        for (const [k, v] of Object.entries(s.labels)) {
          byLabel.set(k, (byLabel.get(k) ?? new Set()).add(v));
        }
      }
    }
  }
  return { names, labels };
}

/** Every mention of the docs that the expositions do not hold, one line each. */
export function documentedButNotExposed(expositions: Iterable<Exposition>): string[] {
  const { names, labels } = exposedIn(expositions);
  const missing = new Set<string>();
  for (const m of docFiles().flatMap(mentionsIn)) {
    if (!names.has(m.metric)) {
      missing.add(`${m.where}: no metric ${m.metric}`);
      continue;
    }
    if (m.label === undefined) continue;
    const values = labels.get(m.metric)?.get(m.label);
    if (values === undefined) missing.add(`${m.where}: no label ${m.metric}{${m.label}}`);
    else if (m.value !== undefined && !values.has(m.value))
      missing.add(`${m.where}: no series ${m.metric}{${m.label}="${m.value}"}`);
  }
  return [...missing];
}
