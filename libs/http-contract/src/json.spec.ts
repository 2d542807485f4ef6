import { isSafeNumber, parse } from 'lossless-json';
import { ValidationError } from '@dlock/lock-api';
import {
  BODY_DEPTH_MAX,
  jsonNestingDepth,
  parseJsonPreservingInt64,
  parsePeerJson,
  parseRequestBody,
} from './json';

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

describe('parseJsonPreservingInt64 (request bodies)', () => {
  it('refuses a duplicate key in a request body; a peer body reads as JSON.parse reads it', () => {
    expect(() => parseJsonPreservingInt64('{"a":1,"a":2}')).toThrow(ValidationError);
    expect(parsePeerJson('{"a":1,"a":2}')).toEqual({ a: 2 });
  });
});

describe('parseRequestBody (every request body)', () => {
  const nested = (depth: number) => `${'['.repeat(depth - 1)}{}${']'.repeat(depth - 1)}`;

  it('counts nesting without parsing, ignoring brackets inside strings', () => {
    expect(jsonNestingDepth('{"a":[1,{"b":"[[[{{{"}]}')).toBe(3);
    expect(jsonNestingDepth('"\\"[["')).toBe(0);
    expect(jsonNestingDepth(nested(4000))).toBe(4000);
  });

  it(`accepts ${BODY_DEPTH_MAX} levels and refuses one more as VALIDATION_FAILED`, () => {
    const atLimit = `{"a":${nested(BODY_DEPTH_MAX - 1)}}`;
    expect(parseRequestBody(atLimit)).toHaveProperty('a');
    expect(() => parseRequestBody(`{"a":${nested(BODY_DEPTH_MAX)}}`)).toThrow(
      'request body nested too deep',
    );
    expect(() => parseRequestBody(nested(3000))).toThrow(ValidationError);
  });

  it.each(['9007199254740993', '-99999999999999999999', '1', 'true', 'null', '"x"', '[{}]'])(
    'refuses the non-object body %s',
    (text) => {
      let failure: unknown;
      try {
        parseRequestBody(text);
      } catch (err) {
        failure = err;
      }
      expect(failure).toBeInstanceOf(ValidationError);
      expect((failure as ValidationError).details).toEqual({
        fields: [{ field: 'body', message: 'must be a JSON object' }],
      });
    },
  );
});
