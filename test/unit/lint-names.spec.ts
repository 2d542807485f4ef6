import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';

/**
 * The file-name rule of eslint.config.mjs (CONTRIBUTING.md, "Where a file goes"): an app's
 * files are <thing>.<role>.ts with a role of the list, fed names it must refuse and names it
 * must let through.
 */
const REPO = join(__dirname, '..', '..');
const plugin = jest.requireActual<{ rules: Record<string, unknown>; ROLES: string[] }>(
  join(REPO, 'scripts', 'eslint-rooms.cjs'),
);

function problems(file: string, code = 'export const x = 1;\n'): string[] {
  const linter = new Linter({ cwd: REPO });
  const config = {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { dlock: plugin },
    rules: { 'dlock/names': 'error' },
  } as unknown as Linter.Config;
  return linter.verify(code, config, join(REPO, file)).map((m) => m.message);
}

describe('lint: the names of an app’s files', () => {
  it.each([
    ['a file with no role', 'apps/rail-stub/src/rail/http/dto.ts'],
    ['a role outside the list', 'apps/executor/src/execution/domain/lease.helpers.ts'],
    ['a name in camel case', 'apps/console/src/sessions/service/personRights.service.ts'],
    ['two roles', 'apps/lock-server/src/locks/service/grant.proofs.service.ts'],
    ['a spec named after no role', 'apps/rail-proxy/src/submission/domain/rail-outcome.spec.ts'],
    ['a boot file below the top of src/', 'apps/reconciler/src/detective/config.ts'],
    ['an app-wide file with no role', 'apps/payment-resource/src/metrics.ts'],
  ])('refuses %s (%s)', (_what, file) => {
    const found = problems(file);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('<thing>.<role>.ts');
    expect(found[0]).toContain('CONTRIBUTING.md');
  });

  it('refuses an index.ts that does more than re-export', () => {
    const found = problems(
      'apps/harness/src/scenarios/index.ts',
      "import { a } from './a.scenario';\nexport const ALL = [a];\n",
    );
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('re-export');
  });

  it.each([
    'apps/rail-proxy/src/submission/persistence/submission.repository.ts',
    'apps/lock-server/src/locks/persistence/etcd/etcd-lock.store.ts',
    'apps/executor/src/execution/domain/lease.rules.spec.ts',
    'apps/harness/src/scenarios/uc01-happy-path.scenario.ts',
    'apps/payment-resource/src/main.ts',
    'apps/payment-resource/src/config.spec.ts',
    'apps/console/src/tracing.ts',
    // Outside an app's src/ the rule has nothing to say.
    'apps/rail-proxy/test/support.ts',
    'libs/persistence/src/audit-chain.ts',
  ])('lets %s through', (file) => {
    expect(problems(file)).toEqual([]);
  });

  it('lets through an index.ts that only re-exports its folder', () => {
    const code = "export { a, type A } from './a.model';\nexport * from './b.types';\n";
    expect(problems('apps/harness/src/checkers/linearizability/index.ts', code)).toEqual([]);
  });

  it('every role it accepts is in CONTRIBUTING.md’s list', () => {
    const contributing = readFileSync(join(REPO, 'CONTRIBUTING.md'), 'utf8');
    const missing = plugin.ROLES.filter((role) => !contributing.includes(`\`${role}\``));
    expect(missing).toEqual([]);
  });
});
