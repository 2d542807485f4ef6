import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BUILT_IN_ERROR_CODES, REQUEST_DEADLINE_HEADER } from '@dlock/lock-api';
import { PAYOUT_ERROR_CODES } from '@dlock/payout-contract';

/**
 * docs/contract.md states the error catalogue of the code, no more and no less: the codes every
 * service knows and the payout services' own.
 */
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
    const byCode = (a: { code: string }, b: { code: string }) => a.code.localeCompare(b.code);
    const catalogue = Object.entries({ ...BUILT_IN_ERROR_CODES, ...PAYOUT_ERROR_CODES });
    expect([...rows].sort(byCode)).toEqual(
      catalogue
        .map(([code, spec]) => ({ code, status: spec.httpStatus, retrySafe: spec.retrySafe }))
        .sort(byCode),
    );
  });

  it('says truly which writes take X-Owner-Id: the worker writes, and no operator or payouts-API write', () => {
    const dir = path.join(__dirname, '..', '..', '..', 'docs', 'openapi');
    const taking: string[] = [];
    const writes: string[] = [];
    for (const file of ['lock-server.json', 'payment-resource.json', 'rail-proxy.json']) {
      const doc = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
      for (const [route, item] of Object.entries<any>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(item)) {
          if (method === 'get') continue;
          const name = `${file.replace('.json', '')} ${method.toUpperCase()} ${route}`;
          writes.push(name);
          const headers = (op.parameters ?? []).filter((p: any) => p.in === 'header');
          if (headers.some((p: any) => p.name === 'X-Owner-Id')) taking.push(name);
        }
      }
    }
    // The row of the table and the paragraph after it (the departure from C3) name these.
    expect(taking.sort()).toEqual(
      [
        'lock-server DELETE /v1/locks/{key}',
        'lock-server POST /v1/locks/{key}/acquire',
        'lock-server POST /v1/locks/{key}/renew',
        'lock-server POST /v1/sessions',
        'lock-server DELETE /v1/sessions/{sessionId}',
        'lock-server POST /v1/sessions/{sessionId}/heartbeat',
        'payment-resource POST /v1/payouts/{payoutId}/claim',
        'payment-resource POST /v1/payouts/{payoutId}/post',
        'payment-resource POST /v1/payouts/{payoutId}/rail-outcome',
        'payment-resource POST /v1/payouts/{payoutId}/resolve',
        'rail-proxy POST /v1/rail/submissions',
      ].sort(),
    );
    const row = text.split('\n').find((l) => l.startsWith('| `X-Owner-Id`')) ?? '';
    expect(row).toContain('worker writes');
    for (const part of ['L1–L3', 'L4–L6', 'claim, post, rail-outcome, resolve', 'submissions']) {
      expect(row).toContain(part);
    }
    expect(text).toContain('**Where `X-Owner-Id` is not sent (a departure from C3).**');
    expect(writes.length).toBeGreaterThan(taking.length);
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
