import { readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * Test code stays out of an app's `src/` (CONTRIBUTING.md, "Where a file goes"): helpers live in
 * `apps/<app>/test/support/` or libs/testing, which the build leaves out of the image. What the
 * running app needs for the harness (a hook honoured only with DLOCK_HARNESS=1) is production
 * code in its feature's rooms, never a `harness/` folder beside them.
 */
const REPO = join(__dirname, '..', '..');

/** Why `path` (relative to an app's src/) is test code in the wrong place, or undefined. */
export function misplacedTestCode(path: string): string | undefined {
  const parts = path.split(/[\\/]/);
  const folder = parts.slice(0, -1).find((p) => p === 'fixtures' || p === 'harness');
  if (folder !== undefined) return `a ${folder}/ folder: test helpers go to test/support/`;
  if (parts[parts.length - 1].endsWith('.testing.ts')) {
    return 'a *.testing.ts file: test helpers go to test/support/';
  }
  return undefined;
}

function appSources(): string[] {
  const apps = join(REPO, 'apps');
  return readdirSync(apps, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((app) =>
      readdirSync(join(apps, app.name, 'src'), { withFileTypes: true, recursive: true })
        .filter((e) => e.isFile())
        .map((e) => relative(join(apps, app.name, 'src'), join(e.parentPath, e.name))),
    );
}

describe("no test code under an app's src/", () => {
  it('names a fixtures/ or harness/ folder and a *.testing.ts file, and nothing else', () => {
    expect(misplacedTestCode(['fixtures', 'fixtures.ts'].join(sep))).toMatch(/fixtures\//);
    expect(misplacedTestCode('execution/harness/hooks.ts')).toMatch(/harness\//);
    expect(misplacedTestCode('checkers/history-builder.testing.ts')).toMatch(/testing\.ts/);
    expect(misplacedTestCode('execution/service/harness-attempt.service.ts')).toBeUndefined();
    expect(misplacedTestCode('fixtures.ts')).toBeUndefined();
  });

  it('finds none in apps/*/src', () => {
    const found = appSources().filter((f) => misplacedTestCode(f) !== undefined);
    expect(found).toEqual([]);
  });
});
