/** @type {import('jest').Config} */
module.exports = {
  roots: ['<rootDir>/test'],
  testEnvironment: '<rootDir>/test/setup/node-environment.js',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['**/*.test.ts'],
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  // Workflow tests share one dev server; two cores cannot run many files at once usefully.
  maxWorkers: 2,
  testTimeout: 120_000,
};
