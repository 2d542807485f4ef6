import { withoutGrantFields } from './grant-fields.rules';

describe('withoutGrantFields', () => {
  it("drops a grant's token and session id, keeps everything else", () => {
    expect(
      withoutGrantFields({
        resourceId: 'acct-1',
        presentedToken: '7',
        highestToken: '9',
        ownerId: 'executor-2',
        sessionId: 's-1',
        newTokenFloor: '10',
      }),
    ).toEqual({ resourceId: 'acct-1', ownerId: 'executor-2', newTokenFloor: '10' });
    const plain = { key: 'payout:a', reason: 'stuck' };
    expect(withoutGrantFields(plain)).toBe(plain);
  });
});
