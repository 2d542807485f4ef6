/**
 * A service's signing keys (docs/security.md, "Signed grants"): the
 * lock-server's grant keys, payment-resource's instruction keys. Creates a
 * ring, and rotates it without downtime in three steps.
 *
 *   node dist/scripts/signing-keys.js new RING        a ring with one key (kept if there is one)
 *   node dist/scripts/signing-keys.js add RING        step 1: a new key, published, not signing
 *   node dist/scripts/signing-keys.js promote RING KID   step 2: KID signs from now on
 *   node dist/scripts/signing-keys.js retire RING KID    step 3: KID is no longer published
 *
 * Each step also writes the public JWKS beside the ring (`<name>.jwks.json`).
 */
import {
  addSigningKey,
  ensureSigningKeys,
  KeyRingError,
  promoteSigningKey,
  retireSigningKey,
  SigningKeyRing,
} from '@dlock/identity';

const USAGE = 'usage: signing-keys new|add RING  |  signing-keys promote|retire RING KID';

function run(args: string[]): string {
  const [command, ring, kid] = args;
  if (!ring) throw new KeyRingError(USAGE);
  switch (command) {
    case 'new':
      return `ring ${ensureSigningKeys(ring).keys}, signing with ${SigningKeyRing.open(ring).kid}`;
    case 'add':
      return `added ${addSigningKey(ring)}: published, not signing yet`;
    case 'promote':
      if (!kid) throw new KeyRingError(USAGE);
      promoteSigningKey(ring, kid);
      return `${kid} signs from now on`;
    case 'retire':
      if (!kid) throw new KeyRingError(USAGE);
      retireSigningKey(ring, kid);
      return `${kid} retired`;
    default:
      throw new KeyRingError(USAGE);
  }
}

try {
  console.log(`[signing-keys] ${run(process.argv.slice(2))}`);
} catch (err) {
  console.error(`[signing-keys] ${(err as Error).message}`);
  process.exit(2);
}
