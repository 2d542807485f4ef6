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

describe('parseFencingToken: boundaries and what the caller is told', () => {
  it('accepts the smallest token, 1, in every form', () => {
    expect(parseFencingToken('1')).toBe(1n);
    expect(parseFencingToken(1n)).toBe(1n);
    expect(parseFencingToken(1)).toBe(1n);
  });

  it.each([
    [undefined, 'X-Fencing-Token is missing'],
    [null, 'X-Fencing-Token is not a decimal string'],
    [true, 'X-Fencing-Token is not a decimal string'],
    [0n, 'X-Fencing-Token is out of range'],
    [FENCING_TOKEN_MAX + 1n, 'X-Fencing-Token is out of range'],
    [0, 'X-Fencing-Token is not a positive integer'],
    [2 ** 53, 'X-Fencing-Token is not a positive integer'],
    ['007', 'X-Fencing-Token is not a canonical positive decimal'],
    ['9223372036854775808', 'X-Fencing-Token is above the int64 maximum'],
  ])('%p is refused with the message %j and the field in details', (input, message) => {
    let caught: unknown;
    try {
      parseFencingToken(input);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidTokenError);
    expect((caught as InvalidTokenError).message).toBe(message);
    expect((caught as InvalidTokenError).details).toEqual({ field: 'X-Fencing-Token' });
  });

  it('names the field it was given', () => {
    expect(() => parseFencingToken('x', 'expectedToken')).toThrow(
      'expectedToken is not a canonical positive decimal',
    );
  });
});
