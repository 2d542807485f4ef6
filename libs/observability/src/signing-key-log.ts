import { Logger } from '@nestjs/common';
import { SigningKeyRing } from '@dlock/identity';

const logger = new Logger('signing-keys');

/**
 * What a service's signing ring reports to its log (SigningKeyRing.open's listener): the key it
 * signs with at boot and after each promotion, so an operator sees a rotation take effect
 * (docs/security.md, "Rotating the signing keys"; `npm run keys list` shows the ring's side).
 */
function signingKeyLog(ring: string, path: string): (kid: string, published: number) => void {
  return (kid, published) =>
    logger.log(
      { event: 'signing_key', ring, kid, published, path },
      `${ring}: signing with key ${kid} (${published} published)`,
    );
}

/** A service's signing ring, read from the key-ring file at `path`, its key logged as `ring`. */
export function openSigningRing(ring: string, path: string): SigningKeyRing {
  return SigningKeyRing.open(path, Date.now, signingKeyLog(ring, path));
}
