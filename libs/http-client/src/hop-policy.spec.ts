import { DlockError, FencedOutError } from '@dlock/lock-api';
import { PeerUnavailableError } from './errors';
import {
  HOP_RETRIES,
  nothingHappened,
  transientFailure,
  withHopRetries,
  type HopKind,
} from './hop-policy';

const connect = new PeerUnavailableError('p', 'connect', 'refused');
const response = new PeerUnavailableError('p', 'response', 'no answer');
const busy = new DlockError('NOT_LEADER', 'busy', { httpStatus: 503 });
const fenced = new FencedOutError('newer holder', { httpStatus: 409 });

describe('failure classes', () => {
  it.each([
    [connect, true, true],
    [response, false, true],
    [busy, true, true],
    [fenced, false, false],
    [new Error('bug'), false, false],
  ])('%p: nothing happened %p, transient %p', (err, nothing, transient) => {
    expect(nothingHappened(err)).toBe(nothing);
    expect(transientFailure(err)).toBe(transient);
  });
});

/** Attempts made by withHopRetries when every attempt fails with `err`. */
async function attemptsUntilGivingUp(kind: HopKind, err: unknown): Promise<number> {
  let attempts = 0;
  await expect(
    withHopRetries(kind, async () => {
      attempts++;
      throw err;
    }),
  ).rejects.toBe(err);
  return attempts;
}

describe('the fixed budgets', () => {
  it.each([
    ['fencedWrite', connect, 2],
    ['fencedWrite', busy, 2],
    ['fencedWrite', response, 1],
    ['fencedWrite', fenced, 1],
    ['submit', connect, 1],
    ['submit', busy, 1],
    ['advisoryRead', response, 3],
    ['advisoryRead', fenced, 1],
    ['idempotentWrite', response, 3],
  ] as const)('%s after %p: %p attempts', async (kind, err, attempts) => {
    expect(await attemptsUntilGivingUp(kind, err)).toBe(attempts);
    expect(attempts).toBeLessThanOrEqual(HOP_RETRIES[kind].retries + 1);
  });

  it('an abort during the wait ends the retries with its reason', async () => {
    const controller = new AbortController();
    let attempts = 0;
    const pending = withHopRetries(
      'advisoryRead',
      () => {
        attempts++;
        controller.abort(new Error('shutdown'));
        return Promise.reject(busy);
      },
      controller.signal,
    );
    await expect(pending).rejects.toThrow('shutdown');
    expect(attempts).toBe(1);
  });
});
