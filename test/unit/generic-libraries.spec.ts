import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as ts from 'typescript';

/**
 * The generic libraries know nothing of payouts (CONTRIBUTING.md, "What a
 * library may import"): no identifier or string of their sources names a
 * payout, a rail, a ledger, an account or a beneficiary. Comments may (they
 * explain where a library is used). An app hands a library its own
 * operations, error codes and the like through the library's registry.
 */
const REPO = join(__dirname, '..', '..');
const GENERIC = [
  'config',
  'tracing',
  'identity',
  'http-client',
  'http-contract',
  'observability',
  'persistence',
  'metrics',
  'lock-api',
  'polling',
  'prng',
];
const PAYOUT_WORDS = new Set([
  'payout',
  'payouts',
  'rail',
  'rails',
  'ledger',
  'account',
  'accounts',
  'beneficiary',
]);

/** The words of an identifier or string: camelCase, snake_case, kebab-case and spaces split. */
function wordsOf(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

/** Payout words in the code of `file`, comments left out; "service account" is Kubernetes'. */
function payoutWords(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) || ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) {
      const words = wordsOf(node.text);
      words.forEach((w, i) => {
        if (PAYOUT_WORDS.has(w) && !(w.startsWith('account') && words[i - 1] === 'service')) {
          found.push(w);
        }
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sources(lib: string): string[] {
  const dir = join(REPO, 'libs', lib, 'src');
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts'))
    .map((e) => join(e.parentPath, e.name));
}

describe('the generic libraries know no payout', () => {
  const counts = Object.fromEntries(
    GENERIC.flatMap(sources)
      .map((f) => [relative(REPO, f), payoutWords(f).length] as const)
      .filter(([, n]) => n > 0),
  );

  it('finds payout words where they are', () => {
    expect(payoutWords(join(REPO, 'libs/payout-contract/src/operations.ts'))).toContain('payouts');
    expect(wordsOf('railSweepFindingsTotal x-payout-instruction')).toEqual([
      'rail',
      'sweep',
      'findings',
      'total',
      'x',
      'payout',
      'instruction',
    ]);
  });

  it('names none: an app registers its payout knowledge with them at boot', () => {
    expect(counts).toEqual({});
  });
});
