import { isSafeNumber, parse } from 'lossless-json';
import { ValidationError } from '@dlock/lock-api';
import {
  BODY_DEPTH_MAX,
  jsonNestingDepth,
  parseJsonPreservingInt64,
  parsePeerJson,
  parseRequestBody,
} from './json';

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
