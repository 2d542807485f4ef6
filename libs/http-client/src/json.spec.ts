import { isSafeNumber, parse } from 'lossless-json';
import { int64Replacer, isErrorEnvelope, parsePeerJson, stringifyInt64Json } from './json';

/** The lossless parser alone: what every body was read with before the fast path. */
function reference(text: string): unknown {
  return parse(text, null, (value: string) =>
    /^-?\d+$/.test(value) && !isSafeNumber(value) ? BigInt(value) : Number(value),
  );
}

function outcome(read: (text: string) => unknown, text: string): unknown {
  try {
    return { value: read(text) };
  } catch {
    return { failed: true };
  }
}

describe('parsePeerJson', () => {
  it('keeps an integer above 2^53 exact as a bigint, wherever it sits', () => {
    expect(parsePeerJson('{"t":9007199254740993}')).toEqual({
      t: 9007199254740993n,
    });
    expect(parsePeerJson('[1,"9007199254740993",9223372036854775807]')).toEqual([
      1,
      '9007199254740993',
      9223372036854775807n,
    ]);
  });

  it('reads a duplicate key as JSON.parse does (an answer is not input to validate)', () => {
    expect(parsePeerJson('{"a":1,"a":2}')).toEqual({ a: 2 });
  });

  it.each([
    '{"a":1,"b":[true,false,null],"c":{"d":"e"}}',
    '  {"amountMinor": 100, "currency": "EUR"}  ',
    '[-0, 0.1, 1.5e3, -2e-7, 1E+2, 9007199254740991, -9007199254740991]',
    '"\\u00e9\\ud83d\\ude00\\n"',
    '{"__proto__":{"polluted":true},"x":1}',
    '{"nested":[[[[[[[[[[1]]]]]]]]]]}',
    'null',
    '123456789012345',
    '{"ref":"rr-1234567890123456789"}',
  ])('reads %s exactly as the lossless parser does', (text) => {
    expect(outcome(parsePeerJson, text)).toEqual(outcome(reference, text));
  });

  it.each(['', '{', '{"a":}', "{'a':1}", '[1,]', 'NaN', '{"a":1} x', '01'])(
    "refuses %p with the lossless parser's message",
    (text) => {
      let failure: unknown;
      try {
        parsePeerJson(text);
      } catch (err) {
        failure = err;
      }
      let expected: unknown;
      try {
        reference(text);
      } catch (err) {
        expected = err;
      }
      expect(failure).toBeInstanceOf(Error);
      expect((failure as Error).message).toBe((expected as Error).message);
    },
  );
});

describe('int64 on the way out', () => {
  it('writes a bigint as its decimal string and reads it back exactly', () => {
    const token = 2n ** 53n + 1n;
    const text = stringifyInt64Json({ token, n: 1 });
    expect(text).toBe('{"token":"9007199254740993","n":1}');
    expect(BigInt((parsePeerJson(text) as { token: string }).token)).toBe(token);
    expect(JSON.stringify([token], int64Replacer)).toBe('["9007199254740993"]');
  });
});

describe('isErrorEnvelope', () => {
  const good = { code: 'FENCED_OUT', message: 'm', retrySafe: false };
  it.each([
    [good, true],
    [{ ...good, retryAfterMillis: 20, details: {} }, true],
    [{ ...good, code: 'NOPE' }, false],
    [{ code: 'FENCED_OUT', message: 'm' }, false],
    [{ ...good, retryAfterMillis: -1 }, false],
    [{ ...good, details: null }, false],
    ['FENCED_OUT', false],
    [null, false],
  ])('%p → %p', (value, expected) => {
    expect(isErrorEnvelope(value)).toBe(expected);
  });
});
