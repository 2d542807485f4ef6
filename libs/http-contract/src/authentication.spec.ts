import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingHttpHeaders } from 'node:http';
import {
  DEV_ISSUER,
  DevIssuer,
  OPERATOR_AUDIENCE,
  parsePolicy,
  TokenVerifier,
} from '@dlock/identity';
import { authenticateHeaders, type AuthGate, type GateOutcome } from './authentication';

/**
 * The gate's delegation (docs/security.md, "Acting for a person"): the console
 * sends its own token and the signed-in person's in X-Acting-For; the request
 * is then the person's, or refused before anything runs.
 */
const POLICY = `
version: 1
roles:
  console:
    operations: [locks.list, identity.act-for]
  operator:
    operations: [locks.revoke]
identities:
  - subject: console
    roles: [console]
  - subject: 'operator-*'
    roles: [operator]
`;

let dir: string;
let issuer: DevIssuer;
let gate: AuthGate;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dlock-gate-'));
  issuer = await DevIssuer.open(dir);
  const trust = { jwks: issuer.jwksPath, issuer: DEV_ISSUER };
  gate = {
    verifier: new TokenVerifier({ ...trust, audience: 'lock-server' }),
    operatorVerifier: new TokenVerifier({ ...trust, audience: OPERATOR_AUDIENCE }),
    policy: parsePolicy(POLICY, 'gate-test.yaml'),
  };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bearer = async (subject: string, audience = 'lock-server') =>
  `Bearer ${await issuer.mint(subject, audience)}`;
const person = (subject: string, audience = OPERATOR_AUDIENCE) => issuer.mint(subject, audience);

function refusal(outcome: GateOutcome) {
  if ('identity' in outcome) throw new Error(`accepted as ${outcome.identity.subject}`);
  return { code: outcome.refused.code, kind: outcome.kind, message: outcome.refused.message };
}

async function gateOf(headers: IncomingHttpHeaders): Promise<GateOutcome> {
  return authenticateHeaders(headers, gate);
}

describe('acting for a person (X-Acting-For)', () => {
  it("makes the request the person's, with the console kept as via", async () => {
    const outcome = await gateOf({
      authorization: await bearer('console'),
      'x-acting-for': await person('operator-alice'),
    });
    expect(outcome).toEqual({
      identity: { subject: 'operator-alice', expiresAtMs: expect.any(Number), via: 'console' },
    });
  });

  it('accepts an X-Owner-Id naming the person, refuses one naming the console', async () => {
    const headers = {
      authorization: await bearer('console'),
      'x-acting-for': await person('operator-alice'),
    };
    expect(await gateOf({ ...headers, 'x-owner-id': 'operator-alice' })).toHaveProperty(
      'identity.subject',
      'operator-alice',
    );
    expect(refusal(await gateOf({ ...headers, 'x-owner-id': 'console' }))).toEqual({
      code: 'FORBIDDEN',
      kind: 'forbidden',
      message: 'X-Owner-Id is not the authenticated identity',
    });
  });

  it('refuses a caller the policy does not let act for others: 403, refusal policy', async () => {
    const outcome = await gateOf({
      authorization: await bearer('operator-mallory'),
      'x-acting-for': await person('operator-alice'),
    });
    expect(refusal(outcome)).toEqual({
      code: 'FORBIDDEN',
      kind: 'policy',
      message: 'not allowed by the authorisation policy: identity may not call identity.act-for',
    });
    expect(outcome).toMatchObject({
      subject: 'operator-mallory',
      refused: { details: { reason: 'policy', operation: 'identity.act-for' } },
    });
  });

  it.each([
    ['not a JWT', () => Promise.resolve('not-a-token'), 'X-Acting-For must be one JWT'],
    ['two of them', async () => `${await person('a')}, ${await person('b')}`, 'one JWT'],
    ['expired', () => issuer.mint('operator-alice', OPERATOR_AUDIENCE, { nowSec: 1 }), 'expired'],
    [
      'a service token (audience lock-server)',
      () => person('operator-alice', 'lock-server'),
      'token claim aud not accepted',
    ],
    ['tampered', async () => `${await person('operator-alice')}x`, 'does not verify'],
  ])('refuses a forwarded token that is %s: 401', async (_what, token, message) => {
    const outcome = await gateOf({
      authorization: await bearer('console'),
      'x-acting-for': await token(),
    });
    expect(refusal(outcome)).toEqual({
      code: 'UNAUTHENTICATED',
      kind: 'unauthenticated',
      message: expect.stringContaining(message),
    });
  });

  it("refuses a person's token sent as the service token: its audience is the console", async () => {
    const outcome = await gateOf({ authorization: `Bearer ${await person('operator-alice')}` });
    expect(refusal(outcome)).toMatchObject({ code: 'UNAUTHENTICATED', kind: 'unauthenticated' });
  });

  it("refuses a bad caller token even with a good person's token", async () => {
    const outcome = await gateOf({ 'x-acting-for': await person('operator-alice') });
    expect(refusal(outcome)).toEqual({
      code: 'UNAUTHENTICATED',
      kind: 'unauthenticated',
      message: 'Authorization header missing',
    });
  });

  it('without X-Acting-For, the request is the caller and names no via', async () => {
    expect(await gateOf({ authorization: await bearer('console') })).toEqual({
      identity: { subject: 'console', expiresAtMs: expect.any(Number) },
    });
  });
});
