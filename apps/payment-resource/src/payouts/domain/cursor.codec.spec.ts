import { decodeCursor, encodeCursor } from './cursor.codec';

describe('P1 cursor', () => {
  const c = {
    createdAt: new Date('2026-01-02T03:04:05.678Z'),
    payoutId: '0b6f3c1e-8d1a-4a4e-9f00-2f1f6a7f0c11',
  };

  it('round-trips', () => {
    expect(decodeCursor(encodeCursor(c))).toEqual(c);
  });

  it.each([
    '',
    'not base64!',
    Buffer.from('{"a":1}').toString('base64url'),
    Buffer.from('["2026-13-02T03:04:05.678Z","0b6f3c1e-8d1a-4a4e-9f00-2f1f6a7f0c11"]').toString(
      'base64url',
    ),
    Buffer.from('["2026-01-02T03:04:05.678Z","nope"]').toString('base64url'),
    'A'.repeat(300),
  ])('rejects %p', (text) => {
    expect(() => decodeCursor(text)).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED' }),
    );
  });
});
