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
  // Stryker's incremental mode (bench/reports/mutation.md, "How to run it"): the group's committed
  // result is Stryker's own incremental file, so a run measures only the mutants whose code or
  // tests changed, `--mutate <file>:<lines>` re-measures a piece and keeps every other answer, and
  // `--force` re-runs what is in scope. bench/reports/mutation.md is built from these files.
  incremental: true,
  incrementalFile: `bench/reports/mutation/${group.name}.json`,
  reporters: ['html', 'clear-text', 'progress'],
  htmlReporter: { fileName: `reports/mutation/${group.name}.html` },
  mutate: group.mutate,
};
