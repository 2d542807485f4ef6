// The jest configuration StrykerJS runs for each mutant (stryker.config.json):
// the project's own transform and embedded PostgreSQL, one flat project (the
// jest runner instruments one test environment, not `projects`), and only the
// tests that exercise the safety-critical files in-process. Tests that spawn
// compiled apps from dist/ cannot see a mutant, so they are not listed.
'use strict';
const base = require('../jest.config.js');
const unit = base.projects.find((p) => p.displayName === 'unit');

module.exports = {
  rootDir: '..',
  transform: unit.transform,
  // jose 6 is ESM only and is transformed like our sources (jest.config.js).
  transformIgnorePatterns: unit.transformIgnorePatterns,
  moduleNameMapper: unit.moduleNameMapper,
  testEnvironment: 'node',
  testTimeout: base.testTimeout,
  globalSetup: '<rootDir>/test/global-setup.mjs',
  globalTeardown: '<rootDir>/test/global-teardown.mjs',
  testMatch: [
    '<rootDir>/libs/lock-api/src/**/*.spec.ts',
    '<rootDir>/libs/lock-client/src/**/*.spec.ts',
    '<rootDir>/libs/http-client/src/**/*.spec.ts',
    '<rootDir>/apps/payment-resource/src/**/*.spec.ts',
    '<rootDir>/apps/payment-resource/test/**/*.spec.ts',
    '<rootDir>/apps/rail-proxy/src/**/*.spec.ts',
    '<rootDir>/apps/rail-proxy/test/**/*.spec.ts',
    '<rootDir>/apps/lock-server/src/**/*.spec.ts',
    '<rootDir>/apps/lock-server/test/**/*.spec.ts',
    '<rootDir>/apps/executor/src/**/*.spec.ts',
  ],
  testPathIgnorePatterns: [
    // Minutes of leader kills and database outages per mutant buy nothing the
    // conformance suites do not already show for these files.
    '/etcd-failover\\.spec\\.ts$',
    '/outage\\.spec\\.ts$',
    // These only spawn the compiled apps (dist/ is not in Stryker's sandbox,
    // and a built app would not carry the mutant anyway). Their in-process
    // counterparts: rail-proxy's submission-repository and rail-connection
    // specs, lock-server's tokens.spec, payment-resource's other specs.
    '/payment-resource/test/process\\.spec\\.ts$',
    '/rail-proxy/test/rail-proxy(-durability|-deadline)?\\.spec\\.ts$',
    '/lock-server/test/pg/tokens-process\\.spec\\.ts$',
  ],
};
