import { isSafeNumber, parse } from 'lossless-json';
import { ValidationError } from '@dlock/lock-api';
import { parseJsonPreservingInt64 } from './json';

/** The lossless parser alone: what every request body is read with. */
function reference(text: string): unknown {
  return parse(text, null, (value: string) =>
    /^-?\d+$/.test(value) && !isSafeNumber(value) ? BigInt(value) : Number(value),
  );
}

describe('parseJsonPreservingInt64 (request bodies)', () => {
  it('keeps an integer above 2^53 exact as a bigint', () => {
    expect(parseJsonPreservingInt64('{"t":9007199254740993}')).toEqual({ t: 9007199254740993n });
  });

  it('refuses a duplicate key in a request body', () => {
    expect(() => parseJsonPreservingInt64('{"a":1,"a":2}')).toThrow(ValidationError);
  });

  it.each(['', '{', '{"a":}', "{'a':1}", '[1,]', 'NaN', '{"a":1} x', '01'])(
    "refuses %p as VALIDATION_FAILED with the lossless parser's message",
    (text) => {
      let failure: unknown;
      try {
        parseJsonPreservingInt64(text);
      } catch (err) {
        failure = err;
      }
      expect(failure).toBeInstanceOf(ValidationError);
      let expected = '';
      try {
        reference(text);
      } catch (err) {
        expected = `malformed JSON: ${(err as Error).message}`;
      }
      expect((failure as ValidationError).details).toEqual({
        fields: [{ field: 'body', message: expected }],
      });
    },
  );
});
