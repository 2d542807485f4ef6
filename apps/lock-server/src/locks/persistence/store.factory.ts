import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import type { LockServerConfig } from '../../config';
import { BrokenLockStore, type BrokenMode } from './broken-lock.store';
import { LockStore, SessionRegistry } from './lock-store.port';
import { RevocationLog } from './revocation-log.port';
import { RevocationRequests } from './revocation-requests.port';

/** A backend: the modules it needs (pg: its database) and the providers behind the ports. */
interface Backend {
  imports: DynamicModule[];
  providers: Provider[];
}

/** The ONE place that picks the backend (FR-09): both sit behind LockStore and SessionRegistry. */
export function storeBackend(config: LockServerConfig): Backend {
  const backend = chosenBackend(config);
  return {
    imports: backend.imports,
    providers: withBrokenLockStore(backend.providers, config.LOCK_SERVER_BROKEN),
  };
}

/**
 * Requires, not imports: only the chosen backend is read from disk. The etcd client (etcd3, gRPC,
 * protobufjs) is about a tenth of a pg lock-server's start-up CPU (docs/lock-server.md).
 */
/* eslint-disable @typescript-eslint/no-require-imports */
function chosenBackend(config: LockServerConfig): Backend {
  switch (config.LOCK_BACKEND) {
    case 'pg': {
      const pg = require('./pg/pg-store.providers') as typeof import('./pg/pg-store.providers');
      return { imports: [pg.lockdbModule(config)], providers: pg.pgStoreProviders(config) };
    }
    case 'etcd': {
      const etcd =
        require('./etcd/etcd-store.providers') as typeof import('./etcd/etcd-store.providers');
      return { imports: [], providers: etcd.etcdStoreProviders(config) };
    }
    case 'memory': {
      const memory =
        require('./memory/memory-store.providers') as typeof import('./memory/memory-store.providers');
      return { imports: [], providers: memory.memoryStoreProviders(config) };
    }
    default: {
      const unknown: never = config.LOCK_BACKEND;
      throw new Error(`unknown LOCK_BACKEND ${String(unknown)}`);
    }
  }
}
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * LOCK_SERVER_BROKEN (harness only, refused without DLOCK_HARNESS=1 by
 * config.ts): the backend's LockStore wrapped in one that breaks a rule on
 * purpose, for the linearizability checker's negative controls (docs/harness.md).
 */
function withBrokenLockStore(providers: Provider[], mode: BrokenMode | 'off'): Provider[] {
  if (mode === 'off') return providers;
  return providers.map((p) => {
    if (typeof p !== 'object' || p.provide !== LockStore || !('useFactory' in p)) return p;
    const make = p.useFactory as (...deps: unknown[]) => LockStore | Promise<LockStore>;
    return {
      ...p,
      useFactory: async (...deps: unknown[]) => new BrokenLockStore(await make(...deps), mode),
    };
  });
}

/**
 * The backend, chosen from the validated config: global, so the locks,
 * sessions and revocations modules see only the ports, never which backend.
 */
@Module({})
export class StoreModule {
  static forRoot(config: LockServerConfig): DynamicModule {
    const { imports, providers } = storeBackend(config);
    return {
      module: StoreModule,
      global: true,
      imports,
      providers,
      exports: [LockStore, SessionRegistry, RevocationLog, RevocationRequests],
    };
  }
}
