// The jest configuration StrykerJS runs for each mutant: the project's own
// transform and embedded PostgreSQL, one flat project (the jest runner
// instruments one test environment, not `projects`), and only the specs of the
// group being mutated (stryker/groups.cjs).
'use strict';
const base = require('../jest.config.js');
const { currentGroup, SPAWN_ONLY, OUTAGES } = require('./groups.cjs');

const group = currentGroup();
// A lock-store group runs the conformance suite on its own backend only; the
// jest runner runs tests in this process, so the setting reaches them.
Object.assign(process.env, group.env ?? {});
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
  testMatch: group.tests.map((glob) => `<rootDir>/${glob}`),
  testPathIgnorePatterns: [...SPAWN_ONLY, ...OUTAGES],
};
