import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { OpenAPIObject } from '@nestjs/swagger';
import { JWKS_PATH, OPEN_PATHS } from '@dlock/http-contract';
import { documentText, openApiDocument, OPENAPI_APPS } from '../../../scripts/openapi-documents';

/**
 * The committed OpenAPI documents (docs/openapi/) are what the code produces,
 * and every route in them says what it answers (docs/contract.md).
 */
const APPS = Object.keys(OPENAPI_APPS);
const docs: Record<string, OpenAPIObject> = {};

beforeAll(async () => {
  for (const app of APPS) docs[app] = await openApiDocument(app);
});

type Op = { path: string; method: string; responses: Record<string, any>; security?: unknown[] };

function operationsOf(doc: OpenAPIObject): Op[] {
  return Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.entries(item as Record<string, any>).map(([method, op]) => ({ path: p, method, ...op })),
  );
}

const isEnvelope = (response: any): boolean =>
  response.content?.['application/json']?.schema?.allOf?.[0]?.$ref ===
  '#/components/schemas/ErrorEnvelope';

/** The rail stub's own rail answers are the bank's shapes, not the envelope (docs/rail.md). */
const RAIL_ANSWERS = new Set(['rail-stub post /submit']);

describe('docs/openapi', () => {
  it.each(APPS)('docs/openapi/%s.json is what the code produces', (app) => {
    const file = path.join(__dirname, '..', '..', '..', 'docs', 'openapi', `${app}.json`);
    const committed = readFileSync(file, 'utf8');
    const message = `docs/openapi/${app}.json is stale: run \`npm run build && npm run openapi\` and commit it`;
    expect({ message, same: committed === documentText(docs[app]) }).toEqual({
      message,
      same: true,
    });
  });

  it.each(APPS)('%s: every route has a 2xx and the envelope for each of its errors', (app) => {
    const problems: string[] = [];
    for (const op of operationsOf(docs[app])) {
      const name = `${app} ${op.method} ${op.path}`;
      const statuses = Object.keys(op.responses);
      // Nest adds a bare 200/201 (empty description) to a route nobody described.
      const ok = statuses.filter((s) => /^2\d\d$/.test(s) && op.responses[s].description !== '');
      if (ok.length === 0) problems.push(`${name}: no described 2xx response`);
      for (const s of ok.filter((s) => s !== '204' && !op.responses[s].content)) {
        problems.push(`${name}: ${s} has no body schema`);
      }
      if (OPEN_PATHS.has(op.path) || RAIL_ANSWERS.has(name)) continue;
      if (!isEnvelope(op.responses['400'])) problems.push(`${name}: no 400 envelope`);
      for (const s of statuses.filter((s) => /^[45]\d\d$/.test(s))) {
        if (!isEnvelope(op.responses[s])) {
          problems.push(`${name}: ${s} is not the error envelope`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it.each(APPS)('%s: probes, metrics and the document itself need no token', (app) => {
    const open = operationsOf(docs[app]).filter((op) => OPEN_PATHS.has(op.path));
    // Only the signers publish keys (docs/security.md, "Signed grants").
    const served = [...OPEN_PATHS].filter(
      (p) => p !== JWKS_PATH || OPENAPI_APPS[app].publishesKeys === true,
    );
    expect(open.map((op) => [op.path, op.security])).toEqual(served.sort().map((p) => [p, []]));
  });

  it('every other route of an authenticated service asks for the bearer token and names 401', () => {
    for (const app of APPS.filter((a) => OPENAPI_APPS[a].authenticated)) {
      expect(docs[app].security).toEqual([{ bearer: [] }]);
      for (const op of operationsOf(docs[app]).filter((o) => !OPEN_PATHS.has(o.path))) {
        expect({ op: `${op.method} ${op.path}`, security: op.security }).toEqual({
          op: `${op.method} ${op.path}`,
          security: undefined,
        });
        expect(op.responses['401'].content['application/json'].schema.allOf[1]).toEqual({
          type: 'object',
          properties: { code: { enum: ['UNAUTHENTICATED'] } },
        });
      }
    }
  });

  it('tokens, fences and floors are decimal strings with a pattern, never numbers', () => {
    const offenders: string[] = [];
    let seen = 0;
    const visit = (where: string, node: unknown): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => visit(`${where}[${i}]`, n));
      if (typeof node !== 'object' || node === null) return;
      const obj = node as Record<string, any>;
      for (const [name, prop] of Object.entries<any>(obj.properties ?? {})) {
        if (/token$|Token$|fence|Fence|floor|Floor|TokenBefore|TokenAfter/.test(name)) {
          seen++;
          if (prop.type !== 'string' || !String(prop.pattern).startsWith('^')) {
            offenders.push(`${where}.${name}`);
          }
        }
      }
      for (const [k, v] of Object.entries(obj)) visit(`${where}.${k}`, v);
    };
    for (const app of APPS) visit(app, docs[app]);
    expect(offenders).toEqual([]);
    expect(seen).toBeGreaterThan(20);
  });

  it('the X-Fencing-Token header is a decimal string on every fenced write', () => {
    const headers = APPS.flatMap((app) =>
      operationsOf(docs[app]).flatMap((op: any) =>
        (op.parameters ?? []).filter((p: any) => p.name === 'X-Fencing-Token'),
      ),
    );
    // renew, release; claim, post, rail-outcome, resolve; the rail submission.
    expect(headers.length).toBe(7);
    for (const h of headers) {
      expect(h).toMatchObject({ in: 'header', required: true, schema: { type: 'string' } });
      expect(h.schema.pattern).toBe('^[1-9][0-9]{0,18}$');
    }
  });
});
