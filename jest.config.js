// Unit tests (pure logic) and medium tests (real PostgreSQL, real etcd, real
// processes over real HTTP). One embedded PostgreSQL serves every test file;
// each file creates its own databases on it (libs/testing).
'use strict';
const { testWorkers } = require('./test/workers');
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];
// The packages' entry points, as tsconfig's paths name them: sources, never the built packages.
const moduleNameMapper = {
  '^@dlock/lock-client/testing$': '<rootDir>/libs/lock-client/src/testing',
  '^@dlock/http-contract/schema$': '<rootDir>/libs/http-contract/src/schema',
  '^@dlock/payout-contract/fence-floor$': '<rootDir>/libs/payout-contract/src/fence-floor',
  '^@dlock/payout-contract/audit-chains$': '<rootDir>/libs/payout-contract/src/audit-chains',
  '^@dlock/config/env$': '<rootDir>/libs/config/src/env',
  '^@dlock/persistence/audit$': '<rootDir>/libs/persistence/src/audit',
  '^@dlock/tracing/outbound$': '<rootDir>/libs/tracing/src/outbound',
  '^@dlock/([a-z-]+)$': '<rootDir>/libs/$1/src',
};
const common = {
  // jose 6 ships ESM only: swc turns it into CommonJS like our own sources.
  transform: { '^.+\\.ts$': swc, '/node_modules/jose/.+\\.js$': swc },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  moduleNameMapper,
  // Kills what a test file started and left running, also when it failed (test/environment.js).
  testEnvironment: '<rootDir>/test/environment.js',
  rootDir: __dirname,
  // A running `npm run test:mutation` keeps copies of the repository there, `npm run pack:libs`
  // assembles the packages there (scripts/packages.js), and `npm run bench:compare` keeps the
  // other commit's checkout there (scripts/bench-compare.mjs).
  modulePathIgnorePatterns: [
    '<rootDir>/.stryker-tmp/',
    '<rootDir>/.tmp/packages/',
    '<rootDir>/.tmp/compare-',
  ],
};

module.exports = {
  // One file more than the cores when this run has the machine to itself, half the cores beside
  // another dlock test run (test/workers.js says why).
  maxWorkers: testWorkers(),
  testTimeout: 60_000,
  testSequencer: '<rootDir>/test/sequencer.js',
  globalSetup: '<rootDir>/test/global-setup.mjs',
  globalTeardown: '<rootDir>/test/global-teardown.mjs',
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/libs/**/*.spec.ts',
        '<rootDir>/apps/*/src/**/*.spec.ts',
        '<rootDir>/test/unit/**/*.spec.ts',
      ],
    },
    {
      ...common,
      displayName: 'medium',
      testMatch: [
        '<rootDir>/apps/*/test/**/*.spec.ts',
        '<rootDir>/examples/*/test/**/*.spec.ts',
        '<rootDir>/test/medium/**/*.spec.ts',
      ],
      slowTestThreshold: 30,
    },
    // The image and docker compose on a Docker engine (README, "Test backends"): asked for with
    // DLOCK_CONTAINER_TESTS=1 (.ci/run sets it once its engine runs and the images are built);
    // asked for without an engine or the images, they fail, never skip.
    ...(process.env.DLOCK_CONTAINER_TESTS === '1'
      ? [
          {
            ...common,
            displayName: 'containers',
            testMatch: ['<rootDir>/test/containers/**/*.spec.ts'],
            slowTestThreshold: 60,
          },
        ]
      : []),
  ],
};
