import { LockLostError } from '@dlock/lock-client';
import { logLine } from './nest-logger';

describe('logLine', () => {
  it('is one line: the message, then name=value; an error is its code and message, no stack', () => {
    const err = new LockLostError('lock refund:r-1 lost (lock_lost)');
    const line = logLine('release: lock already gone (benign)', {
      key: 'refund:r-1',
      sessionId: '3f1c-9a',
      code: 'LOCK_LOST',
      token: 2n ** 63n - 1n,
      missing: undefined,
      err,
    });
    expect(line).toBe(
      'release: lock already gone (benign) key=refund:r-1 sessionId=3f1c-9a code=LOCK_LOST ' +
        'token=9223372036854775807 err="LOCK_LOST: lock refund:r-1 lost (lock_lost)"',
    );
    expect(line).not.toContain('\n');
  });

  it("renames the SDK's event field, so only SafetyEvents' line carries event=", () => {
    expect(logLine('lost', { event: 'session_lost', reason: 'a b' })).toBe(
      'lost sdkEvent=session_lost reason="a b"',
    );
  });
});
