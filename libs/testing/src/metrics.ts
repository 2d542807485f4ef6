import { http } from './http';

/** One Prometheus sample of a text exposition: name, labels, value. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** GET `<url>/metrics` as text; throws unless it answers 200. */
export async function scrapeMetrics(url: string): Promise<string> {
  const res = await http('GET', `${url}/metrics`);
  if (res.status !== 200) throw new Error(`${url}/metrics answered ${res.status}`);
  return String(res.text);
}

/**
 * What a series the exposition lacks reads as, said by every caller: `'throw'` for one that must be
 * there (an unlabelled metric, which prom-client writes from the start, or a series after the
 * event that writes it), so a misspelt name fails the test instead of reading as "nothing
 * happened"; `'zero'` only for a labelled counter read before its first increment, which
 * prom-client has not written yet.
 */
export type MissingSeries = 'throw' | 'zero';

/** One series, as /metrics writes it: `name`, or `name{label="value",…}` in prom-client's label order. */
export function seriesValue(text: string, series: string, missing: MissingSeries): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (line !== undefined) return Number(line.slice(series.length + 1).split(' ')[0]);
  if (missing === 'zero') return 0;
  throw new Error(`no series ${series} in the exposition`);
}

/** GET `<url>/metrics` and read one series of it (`seriesValue`). */
export async function scrapeSeries(
  url: string,
  series: string,
  missing: MissingSeries,
): Promise<number> {
  return seriesValue(await scrapeMetrics(url), series, missing);
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample of an exposition (comments skipped). */
export function parseMetrics(text: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const line of text.split('\n')) {
    const m = line.startsWith('#') ? null : SAMPLE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) labels[k] = v;
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the samples named `name` whose labels include `labels` (0 when none). */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  return parseMetrics(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/**
 * Label values shaped like an identifier (NFR-09, docs/operations.md): a uuid, a long hex
 * run, a number of 4+ digits (ids, tokens), a lock key (`payout:…`), or an id with a
 * session, payout, account or lock prefix and a digit (`sess-42`; `payout_transition` is a
 * name, not an id). Histogram bounds (`le`) and quantiles are numbers
 * by design and are not label values of ours.
 */
const ID_SHAPES: [string, RegExp][] = [
  ['uuid', /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i],
  ['numeric id', /^\d{4,}$/],
  ['long hex', /\b[0-9a-f]{16,}\b/i],
  ['lock key', /^[a-z]+:[\w.:-]+$/i],
  ['prefixed id', /^(payout|account|acct|session|sess|pay|lock)[_-](?=[\w.-]*\d)[\w.-]+$/i],
];
const NUMERIC_BY_DESIGN = new Set(['le', 'quantile']);

/** `name{label="value"}: shape` for every id-shaped label value of an exposition. */
export function idShapedLabels(text: string): string[] {
  const found: string[] = [];
  for (const s of parseMetrics(text)) {
    for (const [label, value] of Object.entries(s.labels)) {
      if (NUMERIC_BY_DESIGN.has(label)) continue;
      const shape = ID_SHAPES.find(([, re]) => re.test(value));
      if (shape) found.push(`${s.name}{${label}="${value}"}: ${shape[0]}`);
    }
  }
  return found;
}
