/**
 * Metric names in PromQL and in a Prometheus exposition: what the dashboard and alert rules
 * query (test/medium/queried-metrics.spec.ts) and what the services expose.
 */

/** PromQL words that are not metric names: aggregations, operators and modifiers. */
const PROMQL_WORDS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
  'and',
  'or',
  'unless',
  'atan2',
  'bool',
  'offset',
  'inf',
  'nan',
]);
/** Modifiers followed by a parenthesised list of label names. */
const LABEL_LIST_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

const TOKEN = /([a-zA-Z_:][a-zA-Z0-9_:]*)|(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[a-zA-Z]*)|(\s+)|(.)/gy;

/**
 * The metric names a PromQL expression selects. Strings, label matchers and
 * ranges are blanked first (they hold label names, values and durations);
 * then an identifier is a metric unless it is a PromQL word, a function (an
 * identifier followed by `(`) or a label in a by/on/… list.
 */
export function queriedMetrics(expr: string): string[] {
  const blanked = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]');
  const tokens = [...blanked.matchAll(TOKEN)].filter((m) => !m[3]).map((m) => m[0]);
  const names = new Set<string>();
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (!/^[a-zA-Z_:]/.test(t)) continue;
    if (LABEL_LIST_WORDS.has(t.toLowerCase())) {
      if (tokens[i + 1] === '(') i = tokens.indexOf(')', i);
      continue;
    }
    if (PROMQL_WORDS.has(t.toLowerCase()) || tokens[i + 1] === '(') continue;
    names.add(t);
  }
  return [...names];
}

/**
 * Names in a Prometheus text exposition. prom-client prints HELP/TYPE for a
 * registered metric even before its first labelled sample, so the TYPE line
 * counts, with the series names a histogram or summary expands to.
 */
export function exposedMetrics(text: string): string[] {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/.exec(line);
    if (type) {
      const [, name, kind] = type;
      names.add(name);
      if (kind === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
      if (kind === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
    if (sample) names.add(sample[1]);
  }
  return [...names];
}
