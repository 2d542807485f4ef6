import { ContentionError } from '@dlock/lock-api';
import type { LockServerConfig } from '../../config';
import type { OwnerLoad, SessionRegistry } from '../../locks/persistence/lock-store.port';
import { SystemServerClock } from '../../locks/service/server-clock.service';
import { OwnerCaps } from './owner-caps.service';

/** A registry that answers one owner's load and counts how often it was asked. */
function registry(load: OwnerLoad): { reads: () => number; registry: SessionRegistry } {
  let reads = 0;
  const fake = {
    loadOf: async () => {
      reads++;
      return { ...load };
    },
  };
  return { reads: () => reads, registry: fake as unknown as SessionRegistry };
}

const config = {
  LOCK_LOCKS_PER_OWNER_MAX: 2,
  LOCK_SESSIONS_PER_OWNER_MAX: 16,
  LOCK_CONTENTION_RETRY_AFTER_MS: 100,
} as LockServerConfig;

describe('OwnerCaps (pure logic; the caps against real backends: test/conformance/owner-caps.spec.ts)', () => {
  it('an acquire+release loop reads the owner load once, not once per pair', async () => {
    const r = registry({ sessions: 1, locks: 0 });
    const caps = new OwnerCaps(r.registry, config, new SystemServerClock());
    for (let i = 0; i < 50; i++) {
      await caps.checkAcquire('w');
      caps.granted('w');
      caps.released('w');
    }
    expect(r.reads()).toBe(1);
  });

  it('counts grants and releases between reads: the cap refuses at the cap, and frees on a release', async () => {
    const caps = new OwnerCaps(
      registry({ sessions: 1, locks: 1 }).registry,
      config,
      new SystemServerClock(),
    );
    await caps.checkAcquire('w');
    caps.granted('w');
    await expect(caps.checkAcquire('w')).rejects.toBeInstanceOf(ContentionError);
    caps.released('w');
    await expect(caps.checkAcquire('w')).resolves.toBeUndefined();
  });

  it('a release never counts below zero, and a closed session reads afresh', async () => {
    const r = registry({ sessions: 1, locks: 0 });
    const caps = new OwnerCaps(r.registry, config, new SystemServerClock());
    await caps.checkAcquire('w');
    caps.released('w');
    caps.released('w');
    caps.granted('w');
    caps.granted('w');
    await expect(caps.checkAcquire('w')).rejects.toBeInstanceOf(ContentionError);
    caps.forget('w');
    await caps.checkAcquire('w');
    expect(r.reads()).toBe(2);
  });
});
