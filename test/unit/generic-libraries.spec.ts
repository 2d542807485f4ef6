import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as ts from 'typescript';

/**
 * The generic libraries know nothing of payouts (CONTRIBUTING.md, "What a
 * library may import"): no identifier or string of their sources names a
 * payout, a rail, a ledger, an account, a beneficiary, a payment or a refund. Comments may (they
 * explain where a library is used). An app hands a library its own
 * operations, error codes and the like through the library's registry.
 */
const REPO = join(__dirname, '..', '..');
/**
 * The libraries that are about payouts or are dlock's own client and test kit; every other
 * library under libs/ is generic, so a new one is held to the rule without being listed.
 */
const NOT_GENERIC = ['payout-contract', 'lock-client', 'lock-nest', 'testing'];
const GENERIC = readdirSync(join(REPO, 'libs'), { withFileTypes: true })
  .filter((e) => e.isDirectory() && !NOT_GENERIC.includes(e.name))
  .map((e) => e.name);
const PAYOUT_WORDS = new Set([
  'payout',
  'payouts',
  'rail',
  'rails',
  'ledger',
  'account',
  'accounts',
  'beneficiary',
  // The payment service's name, and the example team's domain (docs/extending.md).
  'payment',
  'payments',
  'refund',
  'refunds',
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

  it('holds every library but the payout, client and test ones to the rule', () => {
    expect(GENERIC).toEqual(
      expect.arrayContaining(['config', 'http-contract', 'observability', 'persistence']),
    );
    expect(GENERIC).not.toContain('payout-contract');
  });

  it('finds payout words where they are', () => {
    // What an app's boot once handed the shared bootstrap: a string naming its own peer.
    expect(wordsOf("auth: 'rail-simulator'").filter((w) => PAYOUT_WORDS.has(w))).toEqual(['rail']);
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
