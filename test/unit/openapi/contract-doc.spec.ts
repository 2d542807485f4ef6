import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ERROR_CATALOGUE, ERROR_CODES, REQUEST_DEADLINE_HEADER } from '@dlock/lock-api';

/** docs/contract.md states the error catalogue of the code, no more and no less. */
describe('docs/contract.md', () => {
  const text = readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'contract.md'), 'utf8');
  const section = text.split('## Error catalogue')[1]?.split('\n## ')[0] ?? '';
  const rows = [...section.matchAll(/^\| `([A-Z_]+)` +\| (\d{3}) +\| (yes|no) +\|/gm)].map(
    ([, code, status, retrySafe]) => ({
      code,
      status: Number(status),
      retrySafe: retrySafe === 'yes',
    }),
  );

  it('lists every code of the catalogue once, with its status and retry-safety', () => {
    expect(rows).toEqual(
      ERROR_CODES.map((code) => ({
        code,
        status: ERROR_CATALOGUE[code].httpStatus,
        retrySafe: ERROR_CATALOGUE[code].retrySafe,
      })),
    );
  });

  it('describes every request header the OpenAPI documents name', () => {
    const dir = path.join(__dirname, '..', '..', '..', 'docs', 'openapi');
    const names = new Set<string>([REQUEST_DEADLINE_HEADER, 'Authorization']);
    for (const file of readdirSync(dir)) {
      const doc = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
      for (const item of Object.values<any>(doc.paths)) {
        for (const op of Object.values<any>(item)) {
          for (const p of op.parameters ?? []) if (p.in === 'header') names.add(p.name);
        }
      }
    }
    const table = text.split('## Headers')[1].split('\n## ')[0];
    expect([...names].filter((n) => !table.includes(`| \`${n}\``)).sort()).toEqual([]);
  });
});
