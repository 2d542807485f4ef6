// The mutation campaign (`npm run test:mutation`), split into groups: the
// safety-critical files of one component each, judged only by the specs that
// run that component in the jest process. A mutant then runs the few specs
// that can see it, and one group can be re-measured alone
// (`npm run test:mutation -- lock-pg-store`). How to read the results:
// bench/reports/mutation.md.
'use strict';

/** Specs that only spawn the compiled apps from dist/ cannot see a mutant. */
const SPAWN_ONLY = [
  '/payment-resource/test/process\\.spec\\.ts$',
  '/rail-proxy/test/rail-proxy(-durability|-deadline)?\\.spec\\.ts$',
  '/rail-proxy/test/high-water-list\\.spec\\.ts$',
  '/lock-server/test/pg/tokens-process\\.spec\\.ts$',
];
/** Minutes of leader kills and database outages per mutant buy nothing the conformance suites do not show. */
const OUTAGES = ['/etcd-failover\\.spec\\.ts$', '/outage\\.spec\\.ts$'];

const GROUPS = [
  {
    name: 'token',
    mutate: ['libs/lock-api/src/fencing-token.ts', 'libs/lock-client/src/deadline.ts'],
    tests: ['libs/lock-api/src/**/*.spec.ts', 'libs/lock-client/src/**/*.spec.ts'],
  },
  {
    name: 'lock-client',
    mutate: ['libs/lock-client/src/lock-handle.ts', 'libs/lock-client/src/lock-session.ts'],
    tests: ['libs/lock-client/src/**/*.spec.ts'],
  },
  {
    name: 'transport',
    mutate: ['libs/http-client/src/transport.ts'],
    tests: ['libs/http-client/src/**/*.spec.ts', 'apps/rail-proxy/test/rail-connection.spec.ts'],
  },
  {
    name: 'payment-domain',
    mutate: [
      'libs/payout-contract/src/transition-table.ts',
      'apps/payment-resource/src/ledger/domain/ledger.rules.ts',
    ],
    tests: [
      'libs/payout-contract/src/transition-table.spec.ts',
      'apps/payment-resource/src/**/*.spec.ts',
      'apps/payment-resource/test/**/*.spec.ts',
    ],
  },
  {
    name: 'payment-guards',
    mutate: [
      'apps/payment-resource/src/payouts/persistence/fence.repository.ts',
      'apps/payment-resource/src/ledger/persistence/ledger.repository.ts',
    ],
    tests: ['apps/payment-resource/src/**/*.spec.ts', 'apps/payment-resource/test/**/*.spec.ts'],
  },
  {
    name: 'rail-guards',
    mutate: [
      'apps/rail-proxy/src/sql.ts',
      'apps/rail-proxy/src/submission/persistence/submission.repository.ts',
    ],
    tests: ['apps/rail-proxy/src/**/*.spec.ts', 'apps/rail-proxy/test/**/*.spec.ts'],
  },
  {
    name: 'rail-call',
    mutate: [
      'apps/rail-proxy/src/submission/clients/rail.client.ts',
      'apps/rail-proxy/src/submission/domain/rail-outcome.rules.ts',
    ],
    tests: ['apps/rail-proxy/src/**/*.spec.ts', 'apps/rail-proxy/test/**/*.spec.ts'],
  },
  {
    name: 'lock-pg-sql',
    mutate: ['apps/lock-server/src/locks/persistence/pg/pg-locks.sql.ts'],
    tests: ['apps/lock-server/test/conformance/*.spec.ts', 'apps/lock-server/test/pg/*.spec.ts'],
    env: { LOCK_TEST_BACKEND: 'pg' },
  },
  {
    name: 'lock-pg-store',
    mutate: ['apps/lock-server/src/locks/persistence/pg/pg-lock.store.ts'],
    tests: ['apps/lock-server/test/conformance/*.spec.ts', 'apps/lock-server/test/pg/*.spec.ts'],
    env: { LOCK_TEST_BACKEND: 'pg' },
  },
  {
    name: 'lock-etcd-store',
    mutate: ['apps/lock-server/src/locks/persistence/etcd/etcd-lock.store.ts'],
    tests: ['apps/lock-server/test/conformance/*.spec.ts', 'apps/lock-server/test/etcd/*.spec.ts'],
    env: { LOCK_TEST_BACKEND: 'etcd' },
  },
  {
    name: 'executor',
    mutate: [
      'apps/executor/src/execution/service/payout-execution.service.ts',
      'apps/executor/src/execution/domain/hop-answers.rules.ts',
      'apps/executor/src/execution/domain/refused-payouts.model.ts',
    ],
    tests: ['apps/executor/src/**/*.spec.ts'],
  },
  {
    name: 'recovery',
    mutate: ['apps/executor/src/execution/domain/recovery.rules.ts'],
    tests: ['apps/executor/src/**/*.spec.ts'],
  },
];

/** The group a Stryker run works on: DLOCK_MUTATION_GROUP, set by scripts/mutation.mjs. */
function currentGroup(env = process.env) {
  const name = env.DLOCK_MUTATION_GROUP;
  const group = GROUPS.find((g) => g.name === name);
  if (!group) {
    throw new Error(
      `DLOCK_MUTATION_GROUP must name a group (${GROUPS.map((g) => g.name).join(', ')}); got ${name}`,
    );
  }
  return group;
}

module.exports = { GROUPS, SPAWN_ONLY, OUTAGES, currentGroup };
