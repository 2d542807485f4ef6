import { SessionLostError } from './errors';
import { liveSessionState, SESSION_STATES, sessionGone } from './session-state';

describe('session states (docs/lock-server.md, "Session states")', () => {
  it('are the domain model four', () => {
    expect(SESSION_STATES).toEqual(['ACTIVE', 'SUSPECT', 'EXPIRED', 'CLOSED']);
  });

  it.each([
    [15_000, 15_000, 'ACTIVE'],
    [15_000, 7_500, 'ACTIVE'],
    [15_000, 7_499, 'SUSPECT'],
    [15_000, 0, 'SUSPECT'],
    [6_000, 3_000, 'ACTIVE'],
    [6_000, 2_000, 'SUSPECT'],
  ])('ttl %i ms with %i ms left is %s', (ttl, left, state) => {
    expect(liveSessionState(ttl, left)).toBe(state);
  });

  it('answers an ended session 410 SESSION_EXPIRED with its state, a forgotten one 404', () => {
    const answers = (['EXPIRED', 'CLOSED', 'UNKNOWN'] as const).map(sessionGone);
    for (const a of answers) expect(a).toBeInstanceOf(SessionLostError);
    expect(answers.map((a) => [a.code, a.httpStatus, a.details, a.message])).toEqual([
      ['SESSION_EXPIRED', 410, { state: 'EXPIRED' }, 'session expired; its locks were released'],
      ['SESSION_EXPIRED', 410, { state: 'CLOSED' }, 'session closed; its locks were released'],
      ['SESSION_UNKNOWN', 404, undefined, 'no such session'],
    ]);
  });
});
