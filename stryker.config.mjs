// StrykerJS for one group of the safety-critical files (stryker/groups.cjs),
// named by DLOCK_MUTATION_GROUP. Run it through `npm run test:mutation`, which
// sets the group and starts the embedded PostgreSQL the tests need;
// bench/reports/mutation.md says how to read the result.
import groups from './stryker/groups.cjs';

const group = groups.currentGroup();

export default {
  testRunner: 'jest',
  jest: { configFile: 'stryker/jest.config.js', enableFindRelatedTests: false },
  coverageAnalysis: 'perTest',
  concurrency: Number(process.env.DLOCK_MUTATION_CONCURRENCY ?? 2),
  timeoutMS: 30000,
  dryRunTimeoutMinutes: 20,
  timeoutFactor: 2,
  disableTypeChecks: '{apps,libs,migrations,test}/**/*.ts',
  ignorePatterns: ['dist', '.dlock', '.tmp', 'bench/reports', 'reports', '.stryker-tmp'],
  reporters: ['json', 'clear-text', 'progress'],
  // A re-check of some mutants (scripts/mutation.mjs --recheck-timeouts) writes beside the group's result.
  jsonReporter: {
    fileName: process.env.DLOCK_MUTATION_RESULT ?? `bench/reports/mutation/${group.name}.json`,
  },
  mutate: group.mutate,
};
