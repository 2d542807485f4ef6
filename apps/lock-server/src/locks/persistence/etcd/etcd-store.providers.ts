import type { Provider } from '@nestjs/common';
import { LockStore, SessionRegistry } from '../lock-store.port';
import { RevocationLog } from '../revocation-log.port';
import type { LockServerConfig } from '../../../config';
import type { EtcdBackendSettings, EtcdStoreConfig } from './etcd.config';
import { EtcdGateway } from './etcd.gateway';
import { EtcdLockStore } from './etcd-lock.store';
import { EtcdRevocationLog } from './etcd-revocation.log';
import { EtcdRevocationRequests } from './etcd-revocation-requests.store';
import { RevocationRequests } from '../revocation-requests.port';
import { EtcdSessionRegistry } from './etcd-session.registry';
import { EtcdSessionWatch } from './etcd-session-watch.loop';

export {
  EtcdEnv,
  readEtcdConfig,
  type EtcdBackendSettings,
  type EtcdStoreConfig,
} from './etcd.config';
export { EtcdGateway } from './etcd.gateway';
export { EtcdLockStore } from './etcd-lock.store';
export { EtcdSessionRegistry } from './etcd-session.registry';

/** The pg defaults of LOCK_NOT_LEADER_RETRY_AFTER_MS and LOCK_SESSION_RETENTION_MS (config.ts). */
const SHARED_DEFAULTS = { notLeaderRetryAfterMs: 1_000, sessionRetentionMs: 3_600_000 };

function settingsOf(config: LockServerConfig | EtcdStoreConfig): EtcdBackendSettings {
  if (!('LOCK_BACKEND' in config)) return { ...SHARED_DEFAULTS, ...config };
  if (!config.etcd) throw new Error('LOCK_BACKEND=etcd but the etcd settings were not read');
  return {
    ...config.etcd,
    notLeaderRetryAfterMs: config.LOCK_NOT_LEADER_RETRY_AFTER_MS,
    sessionRetentionMs: config.LOCK_SESSION_RETENTION_MS,
  };
}

/**
 * The Nest providers of the etcd backend (LOCK_BACKEND=etcd), called by
 * store.factory.ts: LockStore and SessionRegistry, plus the client owner
 * (closed on application shutdown) and the session-death watch. Pass the
 * whole lock-server config so NOT_LEADER's retryAfterMillis and the session
 * retention are the same settings the pg backend uses (FR-09); a bare
 * EtcdStoreConfig gets those settings' defaults.
 */
export function etcdStoreProviders(config: LockServerConfig | EtcdStoreConfig): Provider[] {
  const settings = settingsOf(config);
  return [
    { provide: EtcdGateway, useFactory: () => new EtcdGateway(settings) },
    {
      provide: EtcdSessionWatch,
      useFactory: (gw: EtcdGateway) => new EtcdSessionWatch(gw),
      inject: [EtcdGateway],
    },
    {
      provide: LockStore,
      useFactory: (gw: EtcdGateway, watch: EtcdSessionWatch) => new EtcdLockStore(gw, watch),
      inject: [EtcdGateway, EtcdSessionWatch],
    },
    {
      provide: SessionRegistry,
      useFactory: (gw: EtcdGateway, watch: EtcdSessionWatch) => new EtcdSessionRegistry(gw, watch),
      inject: [EtcdGateway, EtcdSessionWatch],
    },
    {
      provide: RevocationLog,
      useFactory: (gw: EtcdGateway) => new EtcdRevocationLog(gw),
      inject: [EtcdGateway],
    },
    {
      provide: RevocationRequests,
      useFactory: (gw: EtcdGateway) => new EtcdRevocationRequests(gw),
      inject: [EtcdGateway],
    },
  ];
}
