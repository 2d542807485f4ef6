// The rooms of an app and what each may import, and the names of its files (CONTRIBUTING.md,
// "Where a file goes"), as ESLint rules: eslint.config.mjs turns them on for apps/*/src,
// test/unit/lint-rooms.spec.ts and test/unit/lint-names.spec.ts feed them good and bad cases.
// CommonJS so that both can load it.
'use strict';
const path = require('node:path');

/** The rooms a file in each room may import from, in any feature of its own app. */
const MAY_IMPORT = {
  domain: ['domain'],
  http: ['http', 'service', 'domain'],
  service: ['service', 'domain', 'persistence', 'clients'],
  persistence: ['persistence', 'domain'],
  clients: ['clients', 'domain'],
};
const ROOMS = Object.keys(MAY_IMPORT);

/**
 * Where a file sits: its app and its room (the first folder of its path under
 * `apps/<app>/src/` that is a room), or no room for the app-wide files
 * (config.ts, <app>.metrics.ts, …) and a feature's own module file.
 */
function placeOf(file) {
  const parts = path.resolve(file).split(path.sep);
  const at = parts.lastIndexOf('apps');
  if (at < 0 || parts[at + 2] !== 'src') return undefined;
  const folders = parts.slice(at + 3, -1);
  return { app: parts[at + 1], room: folders.find((f) => ROOMS.includes(f)) };
}

/** Why `fromFile` may not import `specifier`, or undefined when it may. */
function roomViolation(fromFile, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const from = placeOf(fromFile);
  if (from === undefined || from.room === undefined) return undefined;
  const to = placeOf(path.resolve(path.dirname(fromFile), specifier) + '.ts');
  // Another project is reached through its @dlock/* alias (eslint.config.mjs says so).
  if (to === undefined || to.app !== from.app) return undefined;
  const allowed = MAY_IMPORT[from.room];
  if (to.room === undefined) {
    return from.room === 'domain'
      ? `domain/ imports nothing of its app but other domain/ rooms: '${specifier}' is app-wide`
      : undefined;
  }
  if (allowed.includes(to.room)) return undefined;
  return `${from.room}/ may import only ${allowed.map((r) => `${r}/`).join(', ')} of its app: '${specifier}' is in ${to.room}/`;
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: "An app's rooms import only the rooms CONTRIBUTING.md allows them" },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const check = (node) => {
      const source = node.source;
      if (!source || source.type !== 'Literal' || typeof source.value !== 'string') return;
      const why = roomViolation(file, source.value);
      if (why !== undefined) {
        context.report({
          node: source,
          message: `${why} (CONTRIBUTING.md, "Where a file goes").`,
        });
      }
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

/** The roles a file name may end in (CONTRIBUTING.md's table of roles; the harness's last). */
const ROLES = [
  'module',
  'controller',
  'dto',
  'params',
  'views',
  'guard',
  'decorator',
  'service',
  'loop',
  'rules',
  'types',
  'errors',
  'model',
  'codec',
  'port',
  'factory',
  'providers',
  'repository',
  'store',
  'log',
  'registry',
  'gateway',
  'sql',
  'file',
  'client',
  'config',
  'metrics',
  'readiness',
  'cli',
  'scenario',
  'checker',
  'nemesis',
  'runner',
  'report',
  'fixture',
  'infra',
  'support',
  'sim',
];
const NAME = new RegExp(`^[a-z0-9]+(?:-[a-z0-9]+)*\\.(?:${ROLES.join('|')})\\.ts$`);
/** An app's boot files, at the top of its src/: scripts and images start dist/apps/<app>/src/main.js. */
const BOOT_FILES = ['main.ts', 'tracing.ts', 'config.ts'];

/** An index.ts that only re-exports (`export … from`), so its folder reads as one module. */
function onlyReExports(program) {
  return program.body.every(
    (node) =>
      node.type === 'ExportAllDeclaration' ||
      (node.type === 'ExportNamedDeclaration' && node.source !== null && node.source !== undefined),
  );
}

/**
 * Why the file at `file` (an app source file or its spec) is misnamed, or undefined when its
 * name keeps the rule. `program` answers whether an index.ts only re-exports.
 */
function nameViolation(file, program) {
  const parts = path.resolve(file).split(path.sep);
  const at = parts.lastIndexOf('apps');
  if (at < 0 || parts[at + 2] !== 'src') return undefined;
  const inSrc = parts.slice(at + 3);
  const base = inSrc[inSrc.length - 1];
  const subject = base.replace(/\.spec\.ts$/, '.ts');
  if (inSrc.length === 1 && BOOT_FILES.includes(subject)) return undefined;
  if (subject === 'index.ts' && base === subject) {
    return program === undefined || onlyReExports(program)
      ? undefined
      : `'${base}' does more than re-export its folder: name it <thing>.<role>.ts`;
  }
  if (NAME.test(subject)) return undefined;
  return `'${base}' is not <thing>.<role>.ts with a role of ${ROLES.length} (${ROLES.slice(0, 4).join(', ')}, …)`;
}

const namesRule = {
  meta: {
    type: 'problem',
    docs: {
      description: "An app's files are named <thing>.<role>.ts, a role of CONTRIBUTING.md's list",
    },
    schema: [],
  },
  create(context) {
    return {
      Program(node) {
        const why = nameViolation(context.filename, node);
        if (why !== undefined) {
          context.report({ node, message: `${why} (CONTRIBUTING.md, "Where a file goes").` });
        }
      },
    };
  },
};

module.exports = {
  rules: { rooms: rule, names: namesRule },
  roomViolation,
  nameViolation,
  MAY_IMPORT,
  ROLES,
};
