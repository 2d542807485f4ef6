// The rooms of an app and what each may import (CONTRIBUTING.md, "Where a file goes"), as an
// ESLint rule: eslint.config.mjs turns it on for apps/*/src, test/unit/lint-rooms.spec.ts
// feeds it good and bad imports. CommonJS so that both can load it.
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
 * (config.ts, metrics.ts, …) and a feature's own module file.
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

module.exports = { rules: { rooms: rule }, roomViolation, MAY_IMPORT };
