// The caller's side of service identity, and the only part published as the
// @dlock/identity package (docs/extending.md): what a service needs to send its
// token to a dlock service, and what a fence point needs to check the
// lock-server's revocation notices (@dlock/lock-nest's FencePointModule).
// Verifying tokens and the authorisation policy stay with the services. Nothing
// here may load jose (ESM only): see ./files.ts.
export type { TokenProvider } from './token-provider';
export { fileTokenProvider, TOKEN_FILE_RELOAD_MS } from './token-files';
export { RevocationNotices } from './revocation-notices';
