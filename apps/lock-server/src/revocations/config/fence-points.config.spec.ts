import { readLockServerConfig } from '../../config';
import { parseFencePoints } from './fence-points.config';

const POINT = {
  name: 'refunds',
  prefix: 'refund:',
  url: 'http://refunds:3000/v1/revocation-notices',
};
const BASE = {
  GRANT_SIGNING_KEYS: '/keys.json',
  LOCKDB_URL: 'postgres://u@db:5432/lockdb',
  AUTH_JWKS: '/jwks.json',
  AUTH_ISSUER: 'https://issuer.test',
  AUTH_POLICY: '/policy.yaml',
};

it('reads an unset or empty FENCE_POINTS as no fence point', () => {
  expect(parseFencePoints(undefined)).toEqual({ points: [], problems: [] });
  expect(parseFencePoints(' ')).toEqual({ points: [], problems: [] });
});

it('reads fence points as given', () => {
  const rail = { ...POINT, name: 'rail', audience: 'rail-proxy' };
  expect(parseFencePoints(JSON.stringify([POINT, rail]))).toEqual({
    points: [POINT, rail],
    problems: [],
  });
});

it.each<[string, unknown, string]>([
  ['not JSON', '[{', 'FENCE_POINTS: is not JSON (an array of fence points)'],
  ['not an array', { ...POINT }, 'FENCE_POINTS: must be an array of at most 16 fence points'],
  [
    'an https URL',
    [{ ...POINT, url: 'https://x/' }],
    'FENCE_POINTS[0].url: must be an http:// URL',
  ],
  ['a prefix no key has', [{ ...POINT, prefix: 'refund/' }], 'FENCE_POINTS[0].prefix'],
  ['an empty prefix', [{ ...POINT, prefix: '' }], 'FENCE_POINTS[0].prefix'],
  ['an unknown field', [{ ...POINT, secret: 'x' }], 'FENCE_POINTS[0].secret'],
  ['a bad audience', [{ ...POINT, audience: 'A B' }], 'FENCE_POINTS[0].audience'],
  ['two of one name', [POINT, POINT], 'FENCE_POINTS: names must be unique'],
  ['a string entry', ['refund:'], 'FENCE_POINTS[0]: must be an object'],
])('refuses %s, naming the place', (_what, value, problem) => {
  const raw = typeof value === 'string' ? value : JSON.stringify(value);
  const { points, problems } = parseFencePoints(raw);
  expect(points).toEqual([]);
  expect(problems.join('\n')).toContain(problem);
});

it('the lock-server refuses the guard URLs it no longer reads, and an audience without tokens', () => {
  expect(() =>
    readLockServerConfig({ ...BASE, PAYMENT_RESOURCE_URL: 'http://payment-resource:8082' }),
  ).toThrow(/PAYMENT_RESOURCE_URL: is no longer read by the lock-server/);
  const withAudience = JSON.stringify([{ ...POINT, audience: 'refunds' }]);
  expect(() => readLockServerConfig({ ...BASE, FENCE_POINTS: withAudience })).toThrow(
    /AUTH_TOKEN_DIR: is required by a fence point with an audience/,
  );
  const read = readLockServerConfig({ ...BASE, FENCE_POINTS: JSON.stringify([POINT]) });
  expect(read.fencePoints).toEqual([POINT]);
});
