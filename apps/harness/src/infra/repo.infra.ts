import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The repository root, found by walking up from this file to the package.json
 * named "dlock". Works from the sources (jest) and from any build output
 * directory, so the harness can always find `dist/apps/<app>/main.js`.
 */
export function repoRoot(): string {
  const override = process.env.DLOCK_ROOT;
  if (override) return override;
  let dir = __dirname;
  for (let i = 0; i < 12; i++) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'dlock')
          return dir;
      } catch {
        /* not ours; keep walking */
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error('cannot find the dlock repository root above ' + __dirname);
}

/**
 * Built entry of an app; the harness drives the same artefacts `npm start`
 * runs. DLOCK_DIST points at another build output (e.g. a copy kept stable
 * while `dist/` is being rebuilt).
 */
export function appMain(app: string): string {
  const dist = process.env.DLOCK_DIST ?? path.join(repoRoot(), 'dist');
  const main = path.join(dist, 'apps', app, 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
  return main;
}
