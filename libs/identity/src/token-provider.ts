/**
 * Returns the bearer token to send now. Called once per outbound request, so
 * a rotated token is picked up without a restart (docs/security.md). Must be
 * cheap: cache, and re-read only when the cached token nears its expiry.
 */
export type TokenProvider = () => string | Promise<string>;
