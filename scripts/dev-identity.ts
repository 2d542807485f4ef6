/**
 * The development issuer as a process (docker compose's `identity` service,
 * docs/security.md): opens or creates the key pair and JWKS under DIR, then
 * keeps a token per audience for each named identity under DIR/tokens/<id>,
 * rewritten at half their lifetime, until stopped. It also keeps the signing
 * rings of grant proofs and payout instructions under DIR/signing (the
 * lock-server and payment-resource sign with them; docs/security.md).
 *
 *   node dist/scripts/dev-identity.js DIR identity [identity ...]
 */
import { join } from 'node:path';
import { DevIssuer, DevTokenFiles, ensureSigningKeys } from '@dlock/identity';

const AUDIENCES = ['lock-server', 'payment-resource', 'rail-proxy', 'executor', 'reconciler'];

async function main(): Promise<void> {
  const [dir, ...identities] = process.argv.slice(2);
  if (!dir || identities.length === 0) {
    console.error('usage: dev-identity DIR identity [identity ...]');
    process.exit(2);
  }
  const issuer = await DevIssuer.open(dir);
  ensureSigningKeys(join(dir, 'signing', 'grant-keys.json'));
  ensureSigningKeys(join(dir, 'signing', 'instruction-keys.json'));
  ensureSigningKeys(join(dir, 'signing', 'receipt-keys.json'));
  for (const identity of identities) {
    const files = new DevTokenFiles(issuer, identity, AUDIENCES, join(dir, 'tokens', identity));
    await files.start((err) => console.error(`[dev-identity] ${identity}: ${String(err)}`));
  }
  console.log(`[dev-identity] JWKS ${issuer.jwksPath}; tokens for ${identities.join(', ')}`);
  // The refresh timers do not hold the process; this does, until a signal ends it.
  setInterval(() => undefined, 1 << 30);
}

main().catch((err: unknown) => {
  console.error('[dev-identity] failed:', err);
  process.exit(1);
});
