import {
  FENCING_TOKEN_MAX,
  InvalidTokenError,
  formatFencingToken,
  parseFencingToken,
} from '@dlock/lock-api';

describe('parseFencingToken', () => {
  it.each(['1', '42', '9007199254740993', '9223372036854775807'])(
    'accepts canonical %s exactly',
    (text) => {
      const token = parseFencingToken(text);
      expect(typeof token).toBe('bigint');
      expect(formatFencingToken(token)).toBe(text);
    },
  );

  it.each([
    '0',
    '-1',
    '01',
    ' 5',
    '5 ',
    '1e3',
    '0x10',
    '1_000',
    '+5',
    '1.0',
    '9223372036854775808',
    '99999999999999999999',
    '',
  ])('rejects %j as INVALID_TOKEN', (text) => {
    expect(() => parseFencingToken(text)).toThrow(InvalidTokenError);
    try {
      parseFencingToken(text);
    } catch (err) {
      expect((err as InvalidTokenError).code).toBe('INVALID_TOKEN');
      expect((err as InvalidTokenError).httpStatus).toBe(400);
    }
  });

  it.each([undefined, null, true, {}, [], 1.5, 0, -3, 2 ** 53])(
    'rejects non-string %p',
    (value) => {
      expect(() => parseFencingToken(value)).toThrow(InvalidTokenError);
    },
  );

  it('accepts bigints in range and safe integers, rejects the rest', () => {
    expect(parseFencingToken(FENCING_TOKEN_MAX)).toBe(FENCING_TOKEN_MAX);
    expect(parseFencingToken(7)).toBe(7n);
    expect(() => parseFencingToken(FENCING_TOKEN_MAX + 1n)).toThrow(InvalidTokenError);
    expect(() => parseFencingToken(0n)).toThrow(InvalidTokenError);
  });
});
