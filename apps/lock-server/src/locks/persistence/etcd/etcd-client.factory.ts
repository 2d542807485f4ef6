import {
  circuitBreaker,
  ConsecutiveBreaker,
  ConstantBackoff,
  ExponentialBackoff,
  handleWhen,
  type IBackoff,
  noop,
  retry,
} from 'cockatiel';
import { Etcd3, isRecoverableError, type IOptions } from 'etcd3';
import type { EtcdStoreConfig } from './etcd.config';

/**
 * The one place that decides how the etcd client reacts to faults.
 *
 * etcd3's stock policies: a global retry (3 attempts on any transient error,
 * including deadline-exceeded writes) over a per-host circuit breaker that
 * opens after 3 consecutive failures and half-opens after 5 s. During a leader
 * election every member answers "no leader" for 1-2 s, so every host's breaker
 * opens and the caller is blind for ~5 s after the cluster has recovered.
 *
 * `tuned` (the default):
 * - host: a breaker that counts only faults of that member (refused
 *   connection, deadline) — never the cluster-wide "etcdserver: ..." answers —
 *   opens after 2 of them and half-opens after 300 ms, so a SIGSTOPped member
 *   is skipped without outliving the election;
 * - global: re-route ONLY a call that never reached a member (connection
 *   refused / not established) to another member, at most once per other
 *   member, no backoff. A call that reached etcd is never re-sent here: its
 *   outcome goes to the caller as NOT_LEADER and the client SDK owns retries;
 * - every unary call carries a deadline (ETCD_CALL_TIMEOUT_MS).
 */

const HOST_BREAKER_HALF_OPEN_MS = 300;
const HOST_BREAKER_FAILURES = 2;

/** Faults of one member (as opposed to "the cluster has no leader", which every member says). */
function isHostFault(err: Error): boolean {
  return isRecoverableError(err) && !err.message.includes('etcdserver:');
}

/** The request provably never left this process for a member: safe to send elsewhere. */
export function isUndelivered(err: Error): boolean {
  const m = err.message;
  return (
    /ECONNREFUSED|No connection established|failed to connect|Connection dropped|ENOTFOUND/i.test(
      m,
    ) && !m.includes('etcdserver:')
  );
}

export function etcdClientOptions(config: EtcdStoreConfig): IOptions {
  const deadline = (ctx: { isStream: boolean }) =>
    ctx.isStream ? {} : { deadline: Date.now() + config.callTimeoutMs };
  const base: IOptions = {
    hosts: config.endpoints,
    defaultCallOptions: deadline,
    grpcOptions: {
      // Reconnect to a restarted member quickly instead of grpc's 1 s .. 120 s backoff.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1_000,
    },
  };
  if (config.faultHandling === 'default') return base;
  return {
    ...base,
    faultHandling: {
      host: () =>
        circuitBreaker(handleWhen(isHostFault), {
          halfOpenAfter: HOST_BREAKER_HALF_OPEN_MS,
          breaker: new ConsecutiveBreaker(HOST_BREAKER_FAILURES),
        }),
      global:
        config.endpoints.length > 1
          ? retry(handleWhen(isUndelivered), {
              maxAttempts: config.endpoints.length - 1,
              backoff: new ConstantBackoff(0),
            })
          : noop,
      // etcd3 calls `.next()` on this at runtime (a backoff factory, as its own
      // default is); its typings say IBackoff, hence the cast.
      watchBackoff: new ExponentialBackoff({
        initialDelay: 50,
        maxDelay: 1_000,
      }) as unknown as IBackoff<unknown>,
    },
  };
}

export function createEtcdClient(config: EtcdStoreConfig): Etcd3 {
  return new Etcd3(etcdClientOptions(config));
}
