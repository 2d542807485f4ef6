import { Logger } from '@nestjs/common';

const logger = new Logger('signing-keys');

/**
 * What a service's signing ring reports to its log (SigningKeyRing.open's listener): the key it
 * signs with at boot and after each promotion, so an operator sees a rotation take effect
 * (docs/security.md, "Rotating the signing keys"; `npm run keys list` shows the ring's side).
 */
export function signingKeyLog(
  ring: string,
  path: string,
): (kid: string, published: number) => void {
  return (kid, published) =>
    logger.log(
      { event: 'signing_key', ring, kid, published, path },
      `${ring}: signing with key ${kid} (${published} published)`,
    );
}
