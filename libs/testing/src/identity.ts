import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AuthPolicy, TokenProvider } from '@dlock/identity';
// Files of @dlock/identity, not its index: the index's environment and policy parts load
// class-validator and yaml, which every test file would pay for at load. testRequestAuth, the
// one helper that needs them, loads the index.
import { DEV_ISSUER, DEV_TOKEN_TTL_SEC, DevIssuer } from '../../identity/src/dev-issuer';
import { ensureSigningKeys } from '../../identity/src/signing-keys';
import { scratchDir } from './scratch';
import { DevTokenFiles } from '../../identity/src/token-files';
import { TokenVerifier } from '../../identity/src/verifier';

/** deploy/policy of the repository, found from here in sources (jest) and in dist/ (benches). */
function policyDir(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, 'deploy', 'policy');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`no deploy/policy above ${__dirname}`);
  }
}
const POLICY_DIR = policyDir();
/**
 * What spawnApp's apps enforce unless a test says otherwise: anyone may do
 * anything (tests act under many made-up names and keys). Tests about
 * authorisation set AUTH_POLICY to DEV_POLICY_PATH or a policy of their own.
 */
export const TEST_POLICY_PATH = join(POLICY_DIR, 'test-policy.yaml');
/** The development policy of `npm start` (executor-*, reconciler, operator, operator-*, feed). */
export const DEV_POLICY_PATH = join(POLICY_DIR, 'dev-policy.yaml');

/**
 * The tests' development issuer (docs/security.md): one per test file (jest
 * gives each file its own module registry), kept in a temp dir removed at
 * exit. Every app spawned by spawnApp trusts it, and http() sends a token it
 * minted, so a test that is not about identity never mentions it.
 */
let issuer: Promise<DevIssuer> | undefined;
let root: string | undefined;
const tokenFiles = new Map<string, Promise<DevTokenFiles>>();
/** origin → the audience (app name) listening there, registered by spawnApp. */
const audiences = new Map<string, string>();

/** Every audience a test caller may need a token for. */
export const SERVICE_AUDIENCES = [
  'lock-server',
  'payment-resource',
  'rail-proxy',
  'executor',
  'reconciler',
] as const;

/** Who a test request acts as when it names no owner. */
export const TEST_OPERATOR = 'operator';

function testRoot(): string {
  if (root === undefined) {
    root = scratchDir('dlock-test-identity-');
  }
  return root;
}

export function testIssuer(): Promise<DevIssuer> {
  issuer ??= DevIssuer.open(join(testRoot(), 'issuer'));
  return issuer;
}

/**
 * The signing keys of this test file's lock-servers (grant proofs),
 * payment-resources (payout instructions) and rail-proxies (rail receipts), with their public JWKS files for
 * the guards (docs/security.md, "Signed grants"). Tests sign with them too
 * (proofs.ts): only a test may hold a signer's private keys.
 */
export function testSigningKeys(): {
  grants: { keys: string; jwks: string };
  instructions: { keys: string; jwks: string };
  receipts: { keys: string; jwks: string };
} {
  return {
    grants: ensureSigningKeys(join(testRoot(), 'signing', 'grant-keys.json')),
    instructions: ensureSigningKeys(join(testRoot(), 'signing', 'instruction-keys.json')),
    receipts: ensureSigningKeys(join(testRoot(), 'signing', 'receipt-keys.json')),
  };
}

/**
 * A service's view of the tests' issuer (where its keys are, who issues, the
 * test policy) and of the signing keys: every app reads what it needs of it.
 */
export async function testAuthEnv(): Promise<{
  AUTH_JWKS: string;
  AUTH_ISSUER: string;
  AUTH_POLICY: string;
  GRANT_SIGNING_KEYS: string;
  GRANT_JWKS: string;
  INSTRUCTION_SIGNING_KEYS: string;
  INSTRUCTION_JWKS: string;
  RECEIPT_SIGNING_KEYS: string;
  RECEIPT_JWKS: string;
}> {
  const { grants, instructions, receipts } = testSigningKeys();
  return {
    AUTH_JWKS: (await testIssuer()).jwksPath,
    AUTH_ISSUER: DEV_ISSUER,
    AUTH_POLICY: TEST_POLICY_PATH,
    GRANT_SIGNING_KEYS: grants.keys,
    GRANT_JWKS: grants.jwks,
    INSTRUCTION_SIGNING_KEYS: instructions.keys,
    INSTRUCTION_JWKS: instructions.jwks,
    RECEIPT_SIGNING_KEYS: receipts.keys,
    RECEIPT_JWKS: receipts.jwks,
  };
}

/**
 * The token directory of `identity` (one file per audience, refreshed at
 * half life while this process runs), as AUTH_TOKEN_DIR for a spawned caller.
 */
export async function testTokenDir(identity: string): Promise<string> {
  let files = tokenFiles.get(identity);
  if (!files) {
    files = (async () => {
      const dir = join(testRoot(), 'tokens', encodeURIComponent(identity));
      const f = new DevTokenFiles(await testIssuer(), identity, SERVICE_AUDIENCES, dir);
      await f.start((err) => console.error(`test token refresh failed: ${String(err)}`));
      return f;
    })();
    tokenFiles.set(identity, files);
  }
  return (await files).dir;
}

/** The full identity environment of a spawned app acting as `identity`. */
export async function testAppAuthEnv(identity: string): Promise<Record<string, string>> {
  return { ...(await testAuthEnv()), AUTH_TOKEN_DIR: await testTokenDir(identity) };
}

/** `Bearer <JWT>` for `subject` addressed to `audience`. */
export async function testBearer(
  subject: string,
  audience: string,
  opts: { ttlSec?: number; nowSec?: number } = {},
): Promise<string> {
  return `Bearer ${await (await testIssuer()).mint(subject, audience, opts)}`;
}

const bearers = new Map<string, { value: Promise<string>; untilMs: number }>();

/**
 * `Bearer <JWT>` for `subject` → `audience`, minted once and reused until
 * half its lifetime has passed (benches send it on every request).
 */
export function cachedBearer(subject: string, audience: string): Promise<string> {
  const key = `${audience}\n${subject}`;
  const hit = bearers.get(key);
  if (hit && Date.now() < hit.untilMs) return hit.value;
  const value = testBearer(subject, audience);
  bearers.set(key, { value, untilMs: Date.now() + (DEV_TOKEN_TTL_SEC * 1000) / 2 });
  return value;
}

/**
 * An SDK token provider for `subject` (lock-server audience by default),
 * minted again after half its lifetime so that a long bench keeps working.
 */
export function testTokenProvider(subject: string, audience = 'lock-server'): TokenProvider {
  return () => cachedBearer(subject, audience).then((bearer) => bearer.slice('Bearer '.length));
}

/**
 * What an in-process app installs (applyHttpContract) for `audience`: the
 * tests' verifiers (its own tokens, and people's tokens for the console) and
 * a policy (the test policy unless `policyPath` is given).
 */
export async function testRequestAuth(
  audience: string,
  policyPath = TEST_POLICY_PATH,
): Promise<{ verifier: TokenVerifier; operatorVerifier: TokenVerifier; policy: AuthPolicy }> {
  const { OPERATOR_AUDIENCE, policyFile } = await import('@dlock/identity');
  const env = await testAuthEnv();
  const trust = { jwks: env.AUTH_JWKS, issuer: env.AUTH_ISSUER };
  return {
    verifier: new TokenVerifier({ ...trust, audience }),
    operatorVerifier: new TokenVerifier({ ...trust, audience: OPERATOR_AUDIENCE }),
    policy: policyFile(policyPath),
  };
}

/** Tells http() which audience listens at `url` (spawnApp and in-process starters call it). */
export function registerAudience(url: string, audience: string): void {
  audiences.set(new URL(url).origin, audience);
}

export function audienceOf(url: string): string | undefined {
  return audiences.get(new URL(url).origin);
}
