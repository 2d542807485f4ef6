import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, scratchDir } from '@dlock/testing';

/**
 * scripts/mutation-report.mjs turns Stryker's results and the explanations in
 * stryker/survivors.json into bench/reports/mutation.md. An explanation must
 * follow its mutant when lines above it move or its file moves, and a result
 * taken on a file that moved or changed must be flagged, never read as current.
 * Run with the real script on a scratch checkout.
 */
const FILE = 'apps/demo/src/guard.ts';
const MOVED = 'apps/demo/src/old/guard.ts';
const MEASURED = [
  'export function f(a: number) {',
  '  if (a > 0) return 1;',
  '  return 0;',
  '}',
  '',
];
const survivor = (line: number) => ({
  mutatorName: 'ConditionalExpression',
  replacement: 'true',
  status: 'Survived',
  location: { start: { line, column: 2 }, end: { line, column: 20 } },
});
const explanation = {
  file: FILE,
  line: 2,
  code: 'if (a > 0) return 1;',
  mutator: 'ConditionalExpression',
  replacement: 'true',
  verdict: 'equivalent',
  note: 'the demo reason',
};

let root: string;

/** The report for one survivor on `line` of `measured`, measured at `measuredAt`, FILE holding `now`. */
function report(measuredAt: string, now: string[] | null, line = 2, measured = MEASURED): string {
  rmSync(root, { recursive: true, force: true });
  for (const dir of ['stryker', 'bench/reports/mutation', 'apps/demo/src'])
    mkdirSync(path.join(root, dir), { recursive: true });
  if (now) writeFileSync(path.join(root, FILE), now.join('\n'));
  writeFileSync(path.join(root, 'stryker/survivors.json'), JSON.stringify([explanation]));
  const result = {
    files: { [measuredAt]: { source: measured.join('\n'), mutants: [survivor(line)] } },
  };
  writeFileSync(path.join(root, 'bench/reports/mutation/demo.json'), JSON.stringify(result));
  const script = path.join(REPO_ROOT, 'scripts/mutation-report.mjs');
  execFileSync(process.execPath, [
    '--input-type=module',
    '-e',
    `import { writeMutationReport } from ${JSON.stringify(script)};
     writeMutationReport(${JSON.stringify(root)}, ['bench/reports/mutation/demo.json']);`,
  ]);
  return readFileSync(path.join(root, 'bench/reports/mutation.md'), 'utf8');
}

const row = (md: string, file: string) => md.split('\n').find((l) => l.startsWith(`| \`${file}`));

describe('mutation report', () => {
  beforeAll(() => {
    root = scratchDir('dlock-mutation-report-');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('explains a survivor measured on the current file, and flags nothing', () => {
    const md = report(FILE, MEASURED);
    expect(row(md, `${FILE}:2`)).toContain('equivalent: the demo reason');
    expect(row(md, FILE)).not.toContain('since measured');
    expect(md).toContain('leaving out the 1 survivors explained as equivalent');
  });

  it('keeps the explanation when the mutated line moved down, by its text', () => {
    // Measured with two lines more above: the mutant sits on line 4, the entry says 2.
    const shifted = ['// a', '// b', ...MEASURED];
    const md = report(FILE, shifted, 4, shifted);
    expect(row(md, `${FILE}:4`)).toContain('equivalent: the demo reason');
  });

  it('does not explain another mutant of the same kind on a line of other text', () => {
    const md = report(FILE, MEASURED, 3);
    expect(row(md, `${FILE}:3`)).toContain('UNEXPLAINED');
  });

  it('flags a result whose file has moved, and finds its explanations under the new path', () => {
    const md = report(MOVED, MEASURED);
    expect(row(md, MOVED)).toContain('**moved since measured**');
    expect(row(md, `${MOVED}:2`)).toContain('equivalent: the demo reason');
    expect(md).toContain(`\`${MOVED}\` (moved)`);
  });

  it('flags a result whose file holds other code now', () => {
    const md = report(FILE, ['export const f = () => 0;', '']);
    expect(row(md, FILE)).toContain('**changed since measured**');
  });
});
