import {
  DB_RETRIES_DEFAULT,
  DB_TRIES_DEFAULT,
  retryDelayMs,
  withDbRetries,
} from './db-retry.rules';

describe('the reconciler database retry layer (docs/contract.md, "Retry counts": 3 retries)', () => {
  it('tries a failing statement 4 times by default (1 try + 3 retries), then throws the last error', async () => {
    expect([DB_RETRIES_DEFAULT, DB_TRIES_DEFAULT]).toEqual([3, 4]);
    let calls = 0;
    const failure = await withDbRetries(DB_TRIES_DEFAULT, async (attempt) => {
      calls++;
      throw new Error(`try ${attempt}`);
    }).catch((e: unknown) => e);
    expect(calls).toBe(4);
    expect((failure as Error).message).toBe('try 4');
  });

  it('returns the first success and stops retrying', async () => {
    let calls = 0;
    const value = await withDbRetries(DB_TRIES_DEFAULT, async () => {
      calls++;
      if (calls < 2) throw new Error('transient');
      return 'rows';
    });
    expect([value, calls]).toEqual(['rows', 2]);
  });

  it('stops at once when the pass is aborted', async () => {
    const abort = new AbortController();
    let calls = 0;
    await expect(
      withDbRetries(
        DB_TRIES_DEFAULT,
        async () => {
          calls++;
          abort.abort();
          throw new Error('down');
        },
        abort.signal,
      ),
    ).rejects.toThrow('down');
    expect(calls).toBe(1);
  });

  it('pauses 200, 400, 600 ms between the tries: under 1.5 s in all', () => {
    expect([1, 2, 3].map(retryDelayMs)).toEqual([200, 400, 600]);
  });
});
