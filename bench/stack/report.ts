/** bench/reports/stack-cost.md from the stack bench's rows (bench.ts). */
import { LAYERS, STATIC_VARIANTS } from './layers';
import { machineLine } from '../lock-server/etcd-common';
import { notesOf } from '../report-notes';

export interface Row {
  service: string;
  phase: string;
  variant: string;
  round: number;
  /** A baseline measured right before this variant, in the same round (ablation pairs). */
  pairedWith?: string;
  /** CPU time (user + system) of the service per request. */
  cpuUs: number;
  /** Instructions the service executed per request (callgrind), V8's compilers left out; or null. */
  instructions: number | null;
  /** Instructions of V8's compilers per request in the same measurement (callgrind), or null. */
  jitInstructions?: number | null;
  /** Statements sent per request, by `database<TAB>statement start`. */
  statements: Record<string, number>;
}

export interface ReportInput {
  rows: Row[];
  before?: Row[];
  callgrind: boolean;
  n: number;
  rounds: number;
  warmup: number;
  rewarm: number;
  loadBefore: number[];
  loadAfter: number[];
  seconds: number;
  env: string[];
  previous: string;
}

function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

type Metric = (r: Row) => number;

/** The value of one variant of one phase: median over rounds. */
function value(rows: Row[], metric: Metric, service: string, phase: string, variant: string) {
  return median(
    rows
      .filter((r) => r.service === service && r.phase === phase && r.variant === variant)
      .map(metric),
  );
}

/**
 * A layer's cost: the baseline measured right before the variant (its pair, same round) minus
 * the variant without the layer, median over rounds. An own-process variant has no pair: the
 * round's first baseline stands in.
 */
function cost(rows: Row[], metric: Metric, service: string, phase: string, variant: string) {
  const baselineOf = (r: Row) => {
    const bases = rows.filter(
      (b) =>
        b.service === service &&
        b.phase === phase &&
        b.variant === 'baseline' &&
        b.round === r.round,
    );
    return bases.find((b) => b.pairedWith === variant) ?? bases[0];
  };
  const deltas: number[] = [];
  for (const r of rows) {
    if (r.service !== service || r.phase !== phase || r.variant !== variant) continue;
    const base = baselineOf(r);
    if (base) deltas.push(metric(base) - metric(r));
  }
  return median(deltas);
}

const fmt = (x: number, callgrind: boolean) =>
  !Number.isFinite(x) ? '–' : callgrind ? `${(x / 1000).toFixed(0)}k` : x.toFixed(0);
const pct = (part: number, whole: number) =>
  Number.isFinite(part) && whole > 0 ? `${((100 * part) / whole).toFixed(0)} %` : '–';

function phasesOf(rows: Row[], service: string): string[] {
  return [...new Set(rows.filter((r) => r.service === service).map((r) => r.phase))];
}

function variantsOf(rows: Row[], service: string): string[] {
  return [...new Set(rows.filter((r) => r.service === service).map((r) => r.variant))];
}

/** Rows: baseline, each layer's cost, all removable layers, what is left; columns: routes. */
function serviceTable(input: ReportInput, metric: Metric, service: string): string[] {
  const { rows, callgrind } = input;
  const phases = phasesOf(rows, service);
  const variants = variantsOf(rows, service).filter((v) => v !== 'baseline');
  const base = phases.map((p) => value(rows, metric, service, p, 'baseline'));
  const line = (label: string, cells: string[]) => `| ${label} | ${cells.join(' | ')} |`;
  const out = [
    line(
      'layer',
      phases.map((p) => `${p}`),
    ),
    line(
      '---',
      phases.map(() => '---:'),
    ),
    line(
      '**whole request (baseline)**',
      base.map((b) => `**${fmt(b, callgrind)}**`),
    ),
  ];
  for (const v of variants) {
    const isStatic = STATIC_VARIANTS.some((s) => s.id === v);
    const cells = phases.map((p, i) => {
      const c = isStatic
        ? base[i] - value(rows, metric, service, p, v)
        : cost(rows, metric, service, p, v);
      return `${fmt(c, callgrind)} (${pct(c, base[i])})`;
    });
    const label =
      v === 'all' ? '**all of the above together**' : isStatic ? `${v} (own process)` : v;
    out.push(line(label, cells));
  }
  if (variants.includes('all')) {
    const left = phases.map((p) => value(rows, metric, service, p, 'all'));
    out.push(
      line(
        'left without them (express, Nest routing, handler, database driver)',
        left.map((l, i) => `${fmt(l, callgrind)} (${pct(l, base[i])})`),
      ),
    );
  }
  return out;
}

function statementsTable(rows: Row[], service: string): string[] {
  const out: string[] = [];
  for (const phase of phasesOf(rows, service)) {
    const base = rows.filter(
      (r) => r.service === service && r.phase === phase && r.variant === 'baseline',
    );
    if (base.length === 0) continue;
    const byKey = new Map<string, number[]>();
    for (const r of base) {
      for (const [k, v] of Object.entries(r.statements)) byKey.set(k, [...(byKey.get(k) ?? []), v]);
    }
    const entries = [...byKey]
      .map(([k, vs]) => [k, median(vs)] as const)
      .filter(([, v]) => v >= 0.05);
    const total = entries.reduce((a, [, v]) => a + v, 0);
    out.push(
      `- ${service} ${phase}: **${total.toFixed(1)}** statements (= round trips) per request`,
    );
    for (const [k, v] of entries) {
      const [db, sql] = k.split('\t');
      out.push(`  - ${v.toFixed(2)} × ${db.replace(/_stack$/, '')}: \`${sql}\``);
    }
  }
  return out;
}

function floorTable(input: ReportInput, metric: Metric): string[] {
  const { rows, callgrind } = input;
  const cell = (service: string, variant: string) =>
    fmt(value(rows, metric, service, 'submit', variant), callgrind);
  if (!rows.some((r) => r.service === 'floor')) return [];
  return [
    '| server answering the rail stub’s POST /submit | per request |',
    '| --- | ---: |',
    `| node:http, body read by hand, JSON.parse/stringify | ${cell('floor', 'http')} |`,
    `| express 5: router, express.text(), res.json | ${cell('floor', 'express')} |`,
    `| Nest 11 on express: a controller with @Body() | ${cell('floor', 'nest')} |`,
    `| fastify 5: its router, JSON parser and serializer | ${cell('floor', 'fastify')} |`,
    `| Nest 11 on fastify: the same controller | ${cell('floor', 'nest-fastify')} |`,
    `| the real rail stub, every layer of this project off ('all') | ${cell('rail-stub', 'all')} |`,
    `| the real rail stub (baseline) | ${cell('rail-stub', 'baseline')} |`,
  ];
}

function beforeAfter(input: ReportInput, metric: Metric): string[] {
  const before = input.before;
  if (!before) return [];
  const out = [
    '| service | route | before | after | change |',
    '| --- | --- | ---: | ---: | ---: |',
  ];
  for (const service of [...new Set(input.rows.map((r) => r.service))]) {
    for (const phase of phasesOf(input.rows, service)) {
      const variant = service === 'floor' ? 'nest' : 'baseline';
      const b = value(before, metric, service, phase, variant);
      const a = value(input.rows, metric, service, phase, variant);
      const change = Number.isFinite(b) ? `${((100 * (a - b)) / b).toFixed(0)} %` : '–';
      out.push(
        `| ${service} | ${phase} | ${fmt(b, input.callgrind)} | ${fmt(a, input.callgrind)} | ${change} |`,
      );
    }
  }
  return out;
}

function header(input: ReportInput): string[] {
  const unit = input.callgrind
    ? 'instructions (k = thousands) per request'
    : 'µs of CPU per request';
  return [
    '# What each layer of the request stack costs (issue 28)',
    '',
    `- machine: ${machineLine()}`,
    `- command: \`npm run build && ${input.env.join(' ')} npm run bench:stack\` (${input.seconds} s)`,
    `- load average (1, 5, 15 min): before ${input.loadBefore.map((l) => l.toFixed(1)).join(', ')}; after ${input.loadAfter.map((l) => l.toFixed(1)).join(', ')}`,
    `- unit: ${unit}; ${input.n} requests per measurement, one in flight, kept-alive connection; ${input.rounds} round(s) of every variant, interleaved in one process; ${input.warmup} warm-up requests at start and ${input.rewarm} iterations after every layer switch`,
    input.callgrind
      ? "- method: the service runs under `valgrind --tool=callgrind --instr-atstart=no`, the warm-ups run uninstrumented, and `callgrind_control -z` / `-d` around each measurement give the instructions the process executed, all threads, user space only (the kernel side of a syscall is not counted), divided by the requests. The instructions of V8's compilers (parser, bytecode generator, TurboFan, deoptimiser) are counted apart and left out: TurboFan still optimises long after the warm-up and its bursts land in one measurement and not the next (a forced full GC before each measurement made it worse: it threw optimised code away). A major GC lands in some measurements and not in others, so each figure is the median of the rounds. Instruction counts do not depend on what else runs on the machine. The bench's own calls wait 50 times their hop budget (X-Request-Deadline-Ms says so), since a service under callgrind runs about that much slower."
      : "- method: the service's own CPU time (process.cpuUsage, user + system) before and after each measurement, divided by the requests; the median of the rounds, and each layer's cost as the median over rounds of its difference to a baseline measured right before it (A B pairs, both after the same re-warm), so drift within a round does not land in every layer. Less load-sensitive than wall time, not insensitive: compare within one report.",
    '- a layer\'s cost is the baseline minus the same requests with that layer taken out (ablate.ts says how); "own process" variants start a process of their own and are compared with the baseline of the main one',
    '',
  ];
}

export function renderReport(input: ReportInput): string {
  const metric: Metric = input.callgrind ? (r) => r.instructions ?? NaN : (r) => r.cpuUs;
  const services = [...new Set(input.rows.map((r) => r.service))].filter((s) => s !== 'floor');
  const lines = [...header(input)];
  const floor = floorTable(input, metric);
  if (floor.length) lines.push('## The framework floor', '', ...floor, '');
  for (const service of services) {
    lines.push(`## ${service}`, '', ...serviceTable(input, metric, service), '');
    const st = statementsTable(input.rows, service);
    if (st.length)
      lines.push('Statements sent to PostgreSQL per request (baseline):', '', ...st, '');
  }
  const ba = beforeAfter(input, metric);
  if (ba.length) lines.push('## Before and after (whole request, baseline)', '', ...ba, '');
  lines.push('## Layers', '', ...LAYERS.map((l) => `- \`${l.id}\`: ${l.what}`));
  lines.push(...STATIC_VARIANTS.map((s) => `- \`${s.id}\` (own process): ${s.what}`), '');
  lines.push(notesOf(input.previous));
  return `${lines.join('\n')}\n`;
}
