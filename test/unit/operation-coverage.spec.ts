import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { operationOf } from '@dlock/http-contract';
import { knownOperations, registerOperations } from '@dlock/identity';
import { PAYOUT_OPERATIONS } from '@dlock/payout-contract';

/**
 * Every route of every authenticating service names its operation for the
 * authorisation policy (docs/security.md): a route without one is refused to
 * everyone at run time, and this test finds it before that.
 */
const REPO = join(__dirname, '..', '..');
/** Routes nobody authenticates to: probes, and the rail stub (a bank outside the system). */
const OPEN_CONTROLLERS = new Set(['libs/observability/src/health.ts']);
// The rail stub stands in for a bank; the console is a local page that calls the
// services with its operator token and serves no service API (docs/console.md).
const OPEN_APPS = ['apps/rail-stub/', 'apps/console/'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts'))
    .map((e) => join(e.parentPath, e.name));
}

function controllerFiles(): string[] {
  return ['apps', 'libs']
    .flatMap((top) => sourceFiles(join(REPO, top)))
    .filter((f) => /\/src\//.test(f) && readFileSync(f, 'utf8').includes('@Controller('))
    .map((f) => relative(REPO, f))
    .filter((f) => !OPEN_CONTROLLERS.has(f) && !OPEN_APPS.some((a) => f.startsWith(a)));
}

interface Route {
  where: string;
  operation: string | undefined;
}

function routesOf(file: string): Route[] {
  const exports = jest.requireActual<Record<string, unknown>>(join(REPO, file));
  const routes: Route[] = [];
  for (const value of Object.values(exports)) {
    if (typeof value !== 'function' || Reflect.getMetadata(PATH_METADATA, value) === undefined) {
      continue;
    }
    const proto = (value as { prototype: Record<string, unknown> }).prototype;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const handler = proto[name];
      if (typeof handler !== 'function' || name === 'constructor') continue;
      if (Reflect.getMetadata(METHOD_METADATA, handler) === undefined) continue;
      routes.push({
        where: `${file} ${value.name}.${name}`,
        operation: operationOf(handler)?.name,
      });
    }
  }
  return routes;
}

describe('every route names an operation of the policy', () => {
  const files = controllerFiles();
  const routes = files.flatMap(routesOf);

  it('finds the controllers of every authenticating service', () => {
    for (const app of ['lock-server', 'payment-resource', 'rail-proxy', 'reconciler']) {
      expect(files.some((f) => f.startsWith(`apps/${app}/`))).toBe(true);
    }
    expect(routes.length).toBeGreaterThanOrEqual(25);
  });

  it('has no route without an operation', () => {
    expect(routes.filter((r) => r.operation === undefined).map((r) => r.where)).toEqual([]);
  });

  it('names only operations the policy knows', () => {
    // What every dlock app registers when its module loads (their app.module.ts).
    registerOperations(PAYOUT_OPERATIONS);
    const known = new Set<string>(knownOperations());
    expect(routes.filter((r) => !known.has(r.operation ?? '')).map((r) => r.where)).toEqual([]);
  });
});
