/**
 * What a Prometheus server would store when scraping the services every few seconds, kept in
 * memory by a test: each round scrapes every target once, and each series keeps one value per
 * round (or none, when it was absent or its target did not answer). The scraper adds `job`,
 * `instance` and the `up` series, as Prometheus does.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** `# TYPE` lines: a metric family is exposed even before its first labelled sample. */
  types: Map<string, string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

/** The label set of `{a="b",c="d"}` starting at text[0] === '{'; returns it and where it ended. */
function parseLabels(text: string): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = 1;
  while (i < text.length && text[i] !== '}') {
    const eq = text.indexOf('=', i);
    const key = text.slice(i, eq).trim();
    let j = eq + 2; // past ="
    let value = '';
    while (text[j] !== '"') {
      if (text[j] === '\\') {
        const c = text[j + 1];
        value += c === 'n' ? '\n' : c;
        j += 2;
      } else {
        value += text[j];
        j += 1;
      }
    }
    labels[key] = value;
    i = j + 1;
    if (text[i] === ',') i += 1;
  }
  return { labels, end: i + 1 };
}

function parseValue(raw: string): number {
  if (raw === '+Inf') return Infinity;
  if (raw === '-Inf') return -Infinity;
  return Number(raw);
}

/** The Prometheus text format as prom-client writes it (no timestamps). */
export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/.exec(line);
    if (type) types.set(type[1], type[2]);
    if (line === '' || line.startsWith('#')) continue;
    const name = NAME.exec(line)?.[0];
    if (name === undefined) throw new Error(`not an exposition line: ${line}`);
    let rest = line.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) {
      const parsed = parseLabels(rest);
      labels = parsed.labels;
      rest = rest.slice(parsed.end);
    }
    samples.push({ name, labels, value: parseValue(rest.trim().split(/\s+/)[0]) });
  }
  return { samples, types };
}

export interface Target {
  job: string;
  port: number;
}

/** The series selector of a sample, labels sorted, as promtool's input_series reads it. */
export function seriesKey(name: string, labels: Record<string, string>): string {
  const body = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',');
  return `${name}{${body}}`;
}

/** promtool's expanding notation for one value; `_` for a round without a sample. */
function notation(value: number | undefined): string {
  if (value === undefined) return '_';
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

export class ScrapedSeries {
  private readonly series = new Map<string, { name: string; byRound: (number | undefined)[] }>();
  /** Every exposition seen, per job: what the docs check reads (names and label values). */
  readonly seen = new Map<string, Exposition[]>();
  rounds = 0;
  /** Unix time of the first round: time 0 of the replay. */
  startedAtS = 0;

  /** One round: every target's /metrics, fetched together, each within `timeoutMs`. */
  async scrapeRound(targets: readonly Target[], timeoutMs: number): Promise<void> {
    const round = this.rounds;
    if (round === 0) this.startedAtS = Date.now() / 1000;
    this.rounds += 1;
    await Promise.all(
      targets.map(async ({ job, port }) => {
        const instance = `127.0.0.1:${port}`;
        let exposition: Exposition | null = null;
        try {
          const res = await fetch(`http://${instance}/metrics`, {
            signal: AbortSignal.timeout(timeoutMs),
          });
          if (res.ok) exposition = parseExposition(await res.text());
        } catch {
          // not scrapeable this round: up is 0
        }
        this.put(round, 'up', { job, instance }, exposition === null ? 0 : 1);
        if (exposition === null) return;
        this.seen.set(job, [...(this.seen.get(job) ?? []), exposition]);
        for (const s of exposition.samples)
          this.put(round, s.name, { ...s.labels, job, instance }, s.value);
      }),
    );
  }

  private put(round: number, name: string, labels: Record<string, string>, value: number): void {
    const key = seriesKey(name, labels);
    const entry = this.series.get(key) ?? { name, byRound: [] };
    entry.byRound[round] = value;
    this.series.set(key, entry);
  }

  /** A series' value at every round (undefined where it had none). */
  values(name: string, labels: Record<string, string>): (number | undefined)[] {
    const byRound = this.series.get(seriesKey(name, labels))?.byRound ?? [];
    return Array.from({ length: this.rounds }, (_, i) => byRound[i]);
  }

  /** promtool input_series of the metrics in `names`; `adjust` may change a series' values. */
  inputSeries(
    names: ReadonlySet<string>,
    adjust: (key: string, values: (number | undefined)[]) => (number | undefined)[] = (_k, v) => v,
  ): { series: string; values: string }[] {
    const out: { series: string; values: string }[] = [];
    for (const [key, { name, byRound }] of this.series) {
      if (!names.has(name)) continue;
      const padded = Array.from({ length: this.rounds }, (_, i) => byRound[i]);
      out.push({ series: key, values: adjust(key, padded).map(notation).join(' ') });
    }
    return out;
  }
}
