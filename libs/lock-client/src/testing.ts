// `@dlock/lock-client/testing` (docs/extending.md, "Testing"): an in-memory
// lock-server for an application's own unit tests, and the lower-level fakes
// the SDK's specs script the lock-server with.
export { FakeLockServer, type FakeLockServerOptions } from './fake-lock-server.testing';
export {
  FakeClock,
  envelope,
  fakeTransport,
  flush,
  ok,
  route,
  serverAt,
  unreachable,
  type FakeReply,
  type RecordedRequest,
  type Route,
} from './fakes.testing';
