import { join } from 'node:path';
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';

/**
 * The room rule of eslint.config.mjs (CONTRIBUTING.md, "Where a file goes"), fed
 * imports it must refuse and imports it must let through.
 */
const REPO = join(__dirname, '..', '..');
const plugin = jest.requireActual<{ rules: Record<string, unknown> }>(
  join(REPO, 'scripts', 'eslint-rooms.cjs'),
);

function problems(file: string, code: string): string[] {
  const linter = new Linter({ cwd: REPO });
  const config = {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { dlock: plugin },
    rules: { 'dlock/rooms': 'error' },
  } as unknown as Linter.Config;
  return linter.verify(code, config, join(REPO, file)).map((m) => m.message);
}

describe('lint: the rooms of an app', () => {
  it.each([
    [
      'apps/executor/src/execution/domain/step.ts',
      "import { M } from '../../metrics';",
      'app-wide',
    ],
    [
      'apps/executor/src/execution/domain/step.ts',
      "import type { C } from '../../config';",
      'app-wide',
    ],
    [
      'apps/rail-proxy/src/submission/domain/e.ts',
      "import { R } from '../persistence/r.repository';",
      'persistence/',
    ],
    [
      'apps/rail-stub/src/rail/service/rail.service.ts',
      "import { D } from '../http/dto';",
      'http/',
    ],
    [
      'apps/lock-server/src/locks/http/a.controller.ts',
      "import { LockStore } from '../persistence/lock-store.port';",
      'persistence/',
    ],
    [
      'apps/payment-resource/src/http/route.params.ts',
      "export { UUID } from '../persistence/db';",
      'persistence/',
    ],
    [
      'apps/reconciler/src/fencing/persistence/p.ts',
      "import { S } from '../service/s';",
      'service/',
    ],
    ['apps/rail-proxy/src/submission/clients/c.ts', "const h = import('../http/h');", 'http/'],
  ])('%s refuses %s', (file, code, where) => {
    const found = problems(file, code);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(where);
    expect(found[0]).toContain('CONTRIBUTING.md');
  });

  it.each([
    ['apps/executor/src/execution/domain/step.ts', "import { O } from './outcome';"],
    ['apps/reconciler/src/fencing/domain/x.ts', "import { P } from '../../detective/domain/p';"],
    [
      'apps/lock-server/src/locks/http/a.controller.ts',
      "import { S } from '../service/lock.service';",
    ],
    ['apps/lock-server/src/locks/http/a.controller.ts', "import { V } from '../../http/views';"],
    ['apps/lock-server/src/locks/http/a.controller.ts', "import type { C } from '../../config';"],
    [
      'apps/rail-proxy/src/submission/service/s.ts',
      "import { R } from '../persistence/r.repository';",
    ],
    ['apps/rail-proxy/src/submission/submission.module.ts', "import { R } from './persistence/r';"],
    ['apps/rail-proxy/src/submission/domain/e.ts', "import { X } from '@dlock/lock-api';"],
  ])('%s may %s', (file, code) => {
    expect(problems(file, code)).toEqual([]);
  });
});
