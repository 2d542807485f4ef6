import type { Provider } from '@nestjs/common';
import type { LockServerConfig } from '../../../config';
import { LockStore, SessionRegistry } from '../lock-store.port';
import { RevocationLog } from '../revocation-log.port';
import { RevocationRequests } from '../revocation-requests.port';
import { MemoryLockStore } from './memory-lock.store';
import { MemoryRevocationLog, MemoryRevocationRequests } from './memory-revocations.store';
import { MemorySessionRegistry } from './memory-session.registry';
import { MemoryLockState, REAL_MEMORY_PORTS, type MemoryBackendPorts } from './memory-state.model';

export { MemoryLockStore, MemorySessionRegistry, MemoryRevocationLog, MemoryRevocationRequests };
export { MemoryLockState, REAL_MEMORY_PORTS, type MemoryBackendPorts };

/** Instances by LOCK_MEMORY_INSTANCE: replicas in one process share one backend, as on pg. */
const INSTANCES = new Map<string, MemoryLockState>();

/**
 * The Nest providers of the memory backend (LOCK_BACKEND=memory, harness only:
 * config.ts refuses it without DLOCK_HARNESS=1). It exists for the
 * conformance suite, which holds it to the same contract as pg and etcd, and
 * for the deterministic simulation, which builds it directly with its own clock.
 */
export function memoryStoreProviders(config: LockServerConfig): Provider[] {
  const name = config.LOCK_MEMORY_INSTANCE ?? 'default';
  let state = INSTANCES.get(name);
  if (!state) {
    state = new MemoryLockState(REAL_MEMORY_PORTS, config.LOCK_SESSION_RETENTION_MS);
    INSTANCES.set(name, state);
  }
  const shared = state;
  return [
    { provide: LockStore, useFactory: () => new MemoryLockStore(shared) },
    { provide: SessionRegistry, useFactory: () => new MemorySessionRegistry(shared) },
    { provide: RevocationLog, useFactory: () => new MemoryRevocationLog(shared) },
    { provide: RevocationRequests, useFactory: () => new MemoryRevocationRequests(shared) },
  ];
}
