// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import dlockRules from './scripts/eslint-rooms.cjs';

/** Projects talk to each other through @dlock/* aliases, never by reaching into a sibling's folder. */
const THROUGH_ALIASES = {
  group: ['**/apps/**', '**/libs/**'],
  message: 'Cross-project imports go through @dlock/* aliases.',
};

/**
 * The libraries' layers, lowest first (docs/architecture.md, "Layers"): a
 * library imports only libraries of lower layers, never one beside or above
 * it. libs/testing and the apps sit above them all.
 */
const LAYERS = [
  ['lock-api', 'config', 'prng', 'polling', 'metrics'],
  ['tracing', 'identity', 'persistence'],
  ['http-client'],
  ['http-contract'],
  ['lock-client', 'payout-contract'],
  ['lock-nest'],
  ['observability'],
];

/** One config per library: every library not below it is refused by name. */
const layerRules = LAYERS.flatMap((layer, rank) =>
  layer.map((lib) => {
    const notBelow = LAYERS.slice(rank)
      .flat()
      .filter((other) => other !== lib);
    return {
      files: [`libs/${lib}/**/*.ts`],
      ignores: ['**/*.spec.ts'],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              THROUGH_ALIASES,
              ...(notBelow.length === 0
                ? []
                : [
                    {
                      group: notBelow.map((other) => `@dlock/${other}`),
                      message: `libs/${lib} is in layer ${rank}: it imports only lower layers (docs/architecture.md, "Layers").`,
                    },
                  ]),
            ],
          },
        ],
      },
    };
  }),
);

/**
 * The lock service knows no resource behind a key (docs/architecture.md, "Layers"): a revoke
 * reaches the fence points FENCE_POINTS names through one generic contract, so nothing of the
 * lock-server, its tests included, may import the payout protocol.
 */
const LOCK_SERVER_KNOWS_NO_PAYOUT = {
  files: ['apps/lock-server/**/*.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          THROUGH_ALIASES,
          {
            group: ['@dlock/payout-contract', '@dlock/payout-contract/*'],
            message:
              'The lock-server knows no payout: fence points come from FENCE_POINTS (docs/security.md, "Revocation notices").',
          },
        ],
      },
    ],
  },
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.dlock/**',
      '.tmp/**',
      '.stryker-tmp/**',
      'reports/**',
      'coverage/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  prettier,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      eqeqeq: ['error', 'always'],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
      'no-restricted-imports': ['error', { patterns: [THROUGH_ALIASES] }],
    },
  },
  ...layerRules,
  {
    // An app's rooms (CONTRIBUTING.md, "Where a file goes"): domain/ imports no other room,
    // http/ reaches service/ and domain/ only, persistence/ is reached from service/.
    files: ['apps/*/src/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    plugins: { dlock: dlockRules },
    rules: { 'dlock/rooms': 'error' },
  },
  {
    // An app's file names are <thing>.<role>.ts, specs included (CONTRIBUTING.md, "Where a file goes").
    files: ['apps/*/src/**/*.ts'],
    plugins: { dlock: dlockRules },
    rules: { 'dlock/names': 'error' },
  },
  {
    // NFR-16: the API library is dependency-free.
    files: ['libs/lock-api/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!node:|\\.)',
              message: 'libs/lock-api imports only node: built-ins and itself (NFR-16).',
            },
          ],
        },
      ],
    },
  },
  {
    // The environment is read once, by config code, into a validated class (CONTRIBUTING.md).
    files: ['apps/*/src/**/*.ts', 'libs/*/src/**/*.ts'],
    ignores: [
      '**/*.spec.ts',
      '**/config.ts',
      'libs/config/**',
      'libs/testing/**',
      // The harness is a test tool: where the repository and its build are, its children's PATH.
      'apps/harness/**',
    ],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: "Only config code reads process.env: add the setting to the app's config class.",
        },
      ],
    },
  },
  {
    // A function longer than this does more than one thing: split it into named steps.
    // Tests are exempt, and so are the migrations (their DDL is fixed once released).
    files: [
      'apps/*/src/**/*.ts',
      'apps/*/main.ts',
      'libs/*/src/**/*.ts',
      'bench/**/*.ts',
      'scripts/**/*.ts',
      'examples/*/src/**/*.ts',
    ],
    ignores: ['**/*.spec.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 70, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: [
      '**/*.spec.ts',
      'test/**/*.ts',
      'libs/testing/**/*.ts',
      'bench/**/*.ts',
      // Builds every app's module graph to describe it (npm run openapi).
      'scripts/openapi-documents.ts',
    ],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      'no-restricted-imports': 'off',
    },
  },
  // After the tests' block, which turns the rule off: the lock-server's tests are held to it too.
  LOCK_SERVER_KNOWS_NO_PAYOUT,
);
