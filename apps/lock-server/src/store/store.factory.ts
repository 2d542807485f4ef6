import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import type { LockServerConfig } from '../config';
import { etcdStoreProviders } from './etcd';
import { LockStore, SessionRegistry } from './lock-store.port';
import { pgStoreProviders } from './pg';
import { RevocationLog } from './revocation-log.port';

/** The ONE place that picks the backend (FR-09): both sit behind LockStore and SessionRegistry. */
export function storeProviders(config: LockServerConfig): Provider[] {
  switch (config.LOCK_BACKEND) {
    case 'pg':
      return pgStoreProviders(config);
    case 'etcd':
      return etcdStoreProviders(config);
    default: {
      const unknown: never = config.LOCK_BACKEND;
      throw new Error(`unknown LOCK_BACKEND ${String(unknown)}`);
    }
  }
}

/**
 * The backend, chosen from the validated config: global, so the locks,
 * sessions and revocations modules see only the ports, never which backend.
 */
@Module({})
export class StoreModule {
  static forRoot(config: LockServerConfig): DynamicModule {
    return {
      module: StoreModule,
      global: true,
      providers: storeProviders(config),
      exports: [LockStore, SessionRegistry, RevocationLog],
    };
  }
}
