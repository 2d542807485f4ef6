// Turns Stryker's JSON result into bench/reports/mutation.md: the score per
// file and every surviving mutant with its explanation from
// stryker/survivors.json (a test that now kills it, or why it is equivalent).
// A survivor nobody has explained is listed as UNEXPLAINED. When the campaign
// ran in file groups, the results of every group are combined, and the report
// names each run it is made of.
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);

/** The text of the line a mutant starts on, in the source it was measured on. */
function codeAt(source, line) {
  return (source.split('\n')[line - 1] ?? '').trim();
}

function loadExplanations(root) {
  const file = path.join(root, 'stryker', 'survivors.json');
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];
}

/**
 * The explanation of a mutant of `file` (measured on `source`), found by what
 * it explains rather than only where: the mutator, the replacement and, when
 * the entry records it (`code`), the text of the mutated line, so that it
 * still applies after lines above it moved. An entry without `code` matches
 * its `line` only. A measured path that no longer exists is a file moved since
 * the run: its explanations are those of the file of the same name.
 * Several matches (the same text on two lines): the nearest line wins.
 */
function explainerOf(explanations, isMoved) {
  return (file, source, m) => {
    const moved = isMoved(file);
    const line = m.location.start.line;
    const code = codeAt(source, line);
    const matches = explanations.filter(
      (e) =>
        (e.file === file || (moved && path.basename(e.file) === path.basename(file))) &&
        e.mutator === m.mutatorName &&
        e.replacement === (m.replacement ?? '') &&
        (e.code === undefined ? e.line === line : e.code === code),
    );
    const distance = (e) => Math.abs(e.line - line);
    return matches.sort((a, b) => distance(a) - distance(b))[0];
  };
}

function percent(part, whole) {
  return whole === 0 ? 100 : (100 * part) / whole;
}

/** Detected over valid; `net` leaves out the survivors explained as equivalent. */
function scoreOf(mutants, isEquivalent = () => false) {
  const detected = mutants.filter((m) => DETECTED.has(m.status)).length;
  const undetected = mutants.filter((m) => UNDETECTED.has(m.status)).length;
  const equivalent = mutants.filter((m) => UNDETECTED.has(m.status) && isEquivalent(m)).length;
  const valid = detected + undetected;
  return {
    detected,
    undetected,
    equivalent,
    valid,
    score: percent(detected, valid),
    net: percent(detected, valid - equivalent),
  };
}

const MOVED = 'moved since measured';

const isComment = (line) => /^\s*(\/\/|\/\*|\*)/.test(line);

/**
 * Why a result is stale, or null: the file has moved (or is gone) since the
 * run, or it holds other code now. A change to comment lines alone moves no
 * mutant and does not count.
 */
export function staleSince(root, file, source) {
  const current = path.join(root, file);
  if (!existsSync(current)) return MOVED;
  if (source === undefined) return null;
  const now = readFileSync(current, 'utf8').split('\n');
  const then = source.split('\n');
  const changed =
    now.length !== then.length ||
    now.some((line, i) => line !== then[i] && !(isComment(line) && isComment(then[i])));
  return changed ? 'changed since measured' : null;
}

function machine() {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const memGiB = (os.totalmem() / 2 ** 30).toFixed(0);
  return `${os.cpus().length} cores (${cpu}), ${memGiB} GiB, Node ${process.version}, ${os.platform()}`;
}

/** Each run's files, and its config and duration when mutation.mjs recorded them. */
function loadRuns(root, resultFiles) {
  return resultFiles.map((file) => {
    const result = JSON.parse(readFileSync(path.join(root, file), 'utf8'));
    const metaFile = path.join(root, file.replace(/\.json$/, '.meta.json'));
    const meta = existsSync(metaFile) ? JSON.parse(readFileSync(metaFile, 'utf8')) : {};
    return { file, files: result.files, ...meta };
  });
}

function runLine(run) {
  const files = Object.keys(run.files).length;
  // A group measured only in pieces (--only=<file>:<from>-<to>) has no whole-run duration.
  const whole = run.minutes
    ? `${files} file(s), ${run.minutes} min${
        run.finishedAt ? `, finished ${run.finishedAt.slice(0, 16).replace('T', ' ')} UTC` : ''
      }`
    : `not run whole: measured in the line ranges below, each alone`;
  return `- \`npm run test:mutation -- ${run.group ?? '?'}\`: ${whole}${
    run.recheck
      ? `; the ${run.recheck.mutants} mutants on its ${run.recheck.lines} line range(s) with a timeout re-run alone (\`--recheck-timeouts\`, ${run.recheck.minutes} min)`
      : ''
  }${(run.refreshed ?? [])
    .map(
      (r) =>
        `; \`${r.file}\` ${/:\d+-\d+$/.test(r.file) ? 'measured' : 're-measured'} alone (\`--only=\`, ${r.minutes} min, finished ${r.finishedAt.slice(0, 16).replace('T', ' ')} UTC)`,
    )
    .join('')}`;
}

/** Groups of stryker/groups.cjs with no result yet: their files are not in the table. */
function missingLines(runs, groups) {
  const measured = new Set(runs.map((r) => r.group));
  return groups
    .filter((g) => !measured.has(g.name))
    .map((g) => `- \`${g.name}\` (${g.mutate.map((f) => `\`${f}\``).join(', ')}): no result yet`);
}

/** Line ranges ("88-193") without those inside another one (a piece re-measured later). */
function outermost(ranges) {
  const spans = ranges.map((r) => r.split('-').map(Number));
  const inside = ([a, b], i) => spans.some(([c, d], j) => j !== i && c <= a && b <= d);
  return spans
    .filter((span, i) => !inside(span, i))
    .sort(([a], [c]) => a - c)
    .map(([a, b]) => `${a}–${b}`);
}

/** Whether the ranges together cover every line of a file of `lineCount` lines. */
function coversAll(ranges, lineCount) {
  const spans = ranges.map((r) => r.split('-').map(Number)).sort(([a], [c]) => a - c);
  let next = 1;
  for (const [from, to] of spans) {
    if (from > next) return false;
    next = Math.max(next, to + 1);
  }
  return next > lineCount;
}

export function writeMutationReport(root, resultFiles, groups = []) {
  const runs = loadRuns(root, resultFiles);
  const rows = [];
  const survivors = [];
  const all = [];
  const merged = Object.assign({}, ...runs.map((r) => r.files));
  const stale = new Map(
    Object.keys(merged)
      .map((f) => [f, staleSince(root, f, merged[f].source)])
      .filter(([, why]) => why !== null),
  );
  const explain = explainerOf(loadExplanations(root), (file) => stale.get(file) === MOVED);
  const equivalentIn = (file) => (m) =>
    explain(file, merged[file].source, m)?.verdict === 'equivalent';
  let equivalentTotal = 0;
  // Files of groups never run whole: the row says which lines its score covers.
  const partial = new Map(
    runs
      .filter((r) => !r.minutes)
      .flatMap((r) => (r.refreshed ?? []).map((x) => x.file.split(':')))
      .filter((parts) => parts.length === 2)
      .reduce((acc, [file, range]) => acc.set(file, [...(acc.get(file) ?? []), range]), new Map()),
  );
  for (const [file, { mutants }] of Object.entries(merged).sort()) {
    const s = scoreOf(mutants, equivalentIn(file));
    all.push(...mutants);
    equivalentTotal += s.equivalent;
    const pieces = partial.get(file);
    const lineCount = merged[file].source.replace(/\n$/, '').split('\n').length;
    const cell = `${
      pieces && !coversAll(pieces, lineCount)
        ? `\`${file}\` (lines ${outermost(pieces).join(', ')} only)`
        : `\`${file}\``
    }${stale.has(file) ? ` **${stale.get(file)}**` : ''}`;
    rows.push(
      s.valid === 0
        ? `| ${cell} | n/a | n/a | 0 | 0 | 0 | ${mutants.length} (none that compiles) |`
        : `| ${cell} | ${s.score.toFixed(1)} % | ${s.net.toFixed(1)} % | ${s.detected} | ${s.undetected} | ${s.equivalent} | ${mutants.length} |`,
    );
    for (const m of mutants.filter((x) => UNDETECTED.has(x.status))) {
      const e = explain(file, merged[file].source, m);
      survivors.push(
        `| \`${file}:${m.location.start.line}\` | ${m.mutatorName} | \`${String(m.replacement ?? '')
          .replace(/\|/g, '\\|')
          .replace(/\n/g, ' ')
          .slice(0, 80)}\` | ${m.status} | ${e ? `${e.verdict}: ${e.note}` : 'UNEXPLAINED'} |`,
      );
    }
  }
  const total = scoreOf(all);
  const net = percent(total.detected, total.valid - equivalentTotal);
  // Whole runs, timeout re-checks and pieces: the machine time the results took.
  const minutes = runs.reduce(
    (sum, r) =>
      sum +
      Number(r.minutes ?? 0) +
      Number(r.recheck?.minutes ?? 0) +
      (r.refreshed ?? []).reduce((s, x) => s + Number(x.minutes), 0),
    0,
  );
  const notes = path.join(root, 'stryker', 'report-notes.md');
  const text = [
    '# Mutation testing of the safety-critical files',
    '',
    `Report rebuilt ${new Date().toISOString().slice(0, 10)} on ${machine()}; each group below says when it was measured.`,
    'Load: these are pass/fail answers, not speed figures, but a busy machine turns slow tests into timeouts (counted as detected), so the notes below give the load of each run (some reached 3 to 27) and which timeouts were re-checked alone.',
    `Command: \`npm run test:mutation\`, which runs the groups of \`stryker/groups.cjs\` one after the other. The results below took ${
      minutes > 0
        ? `${minutes.toFixed(1)} min of runs in all (whole groups, timeout re-checks and pieces)`
        : 'a duration not recorded'
    }:`,
    '',
    ...runs.map(runLine),
    ...missingLines(runs, groups),
    '',
    ...(stale.size > 0
      ? [
          '',
          `**Changed or moved since measured** (re-measure before reading their rows): ${[...stale]
            .map(([f, why]) => `\`${f}\` (${why.replace(' since measured', '')})`)
            .join(', ')}.`,
        ]
      : []),
    '',
    'Files and tests of each group: `stryker/groups.cjs`; Stryker settings: `stryker.config.mjs`.',
    ...(existsSync(notes) ? ['', readFileSync(notes, 'utf8').trim()] : []),
    '',
    `**Overall: ${total.score.toFixed(1)} %** (${total.detected} detected of ${total.valid}; killed and`,
    'timed-out mutants count as detected, survivors and uncovered ones as not);',
    `**${net.toFixed(1)} %** leaving out the ${equivalentTotal} survivors explained as equivalent.`,
    '',
    '| file | score | without equivalents | detected | undetected | of which equivalent | mutants |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    '## Surviving mutants',
    '',
    'Each is explained in `stryker/survivors.json`: `killed-by`, the test added since the run that',
    'kills it; `equivalent`, why no behaviour a user could observe changes; `open`, a gap no test',
    'covers yet, with what it would take. An entry names the file, the mutator, the replacement and',
    'the text of the mutated line (`code`; its `line` says where it was), so it still applies when',
    'lines above it move; a result measured on a path that has since moved is matched by file name.',
    '',
    '| where | mutator | replacement | status | explanation |',
    '| --- | --- | --- | --- | --- |',
    ...survivors,
    '',
  ].join('\n');
  writeFileSync(path.join(root, 'bench', 'reports', 'mutation.md'), text);
  return total;
}
