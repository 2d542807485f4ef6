// The caller's side of service identity, and the only part published as the
// @dlock/identity package (docs/extending.md): what a service needs to send its
// token to a dlock service. Verifying tokens and the authorisation policy
// stay with the services.
export type { TokenProvider } from './token-provider';
export { fileTokenProvider, TOKEN_FILE_RELOAD_MS } from './token-files';
