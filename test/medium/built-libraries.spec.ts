import path from 'node:path';
import { runNode } from '@dlock/testing';

/**
 * The benches and CLIs run the compiled libraries from dist/ (npm run bench:*),
 * one directory deeper than the sources the tests load. A require that only
 * resolves from the sources breaks every bench without failing a test; this
 * loads the built entry points the benches import, as `node` would.
 */
const REPO = path.join(__dirname, '..', '..');
const BUILT = [
  'dist/libs/testing/src/index.js',
  'dist/libs/lock-client/src/index.js',
  'dist/libs/payout-contract/src/index.js',
  'dist/libs/http-client/src/index.js',
];

describe('built libraries load from dist/', () => {
  it.each(BUILT)('%s', async (entry) => {
    const run = await runNode('-e', [`require(${JSON.stringify(path.join(REPO, entry))})`], {});
    expect({ code: run.code, out: run.out }).toEqual({ code: 0, out: '' });
  });
});
