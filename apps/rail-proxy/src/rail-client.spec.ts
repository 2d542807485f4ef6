import { classify } from './rail-client';

const ACK = JSON.stringify({ railReference: 'rr-1', acceptedAt: '2030-01-01T00:00:00.000Z' });

/**
 * The proxy's reading of a rail answer (docs/rail.md, "Outcomes"). Only a
 * well-formed 200 is an ack and only the rail's explicit decline (402) proves
 * nothing was booked; every other answer may have moved money and is ambiguous.
 */
describe('classify: what a rail answer proves', () => {
  it.each([
    [200, ACK, { kind: 'acked', railReference: 'rr-1' }],
    [402, '{}', { kind: 'declined', status: 402 }],
    [402, '', { kind: 'declined', status: 402 }],
    [200, '', { kind: 'ambiguous', reason: 'malformed-ack', status: 200 }],
    [200, 'null', { kind: 'ambiguous', reason: 'malformed-ack', status: 200 }],
    [200, '{"acceptedAt":"x"}', { kind: 'ambiguous', reason: 'malformed-ack', status: 200 }],
    [200, '{"railReference":"rr-1"}', { kind: 'ambiguous', reason: 'malformed-ack', status: 200 }],
    [
      200,
      JSON.stringify({ railReference: 7, acceptedAt: 'x' }),
      { kind: 'ambiguous', reason: 'malformed-ack', status: 200 },
    ],
    [
      200,
      JSON.stringify({ railReference: 'has space', acceptedAt: 'x' }),
      { kind: 'ambiguous', reason: 'malformed-ack', status: 200 },
    ],
    [
      200,
      JSON.stringify({ railReference: 'r'.repeat(129), acceptedAt: 'x' }),
      { kind: 'ambiguous', reason: 'malformed-ack', status: 200 },
    ],
    [201, ACK, { kind: 'ambiguous', reason: 'unexpected-status', status: 201 }],
    [204, '', { kind: 'ambiguous', reason: 'unexpected-status', status: 204 }],
    [302, '', { kind: 'ambiguous', reason: 'unexpected-status', status: 302 }],
    [400, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 400 }],
    [401, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 401 }],
    [403, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 403 }],
    [404, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 404 }],
    [409, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 409 }],
    [422, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 422 }],
    [429, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 429 }],
    [499, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 499 }],
    [500, '{}', { kind: 'ambiguous', reason: 'rail-5xx', status: 500 }],
    [503, '', { kind: 'ambiguous', reason: 'rail-5xx', status: 503 }],
    [599, '', { kind: 'ambiguous', reason: 'rail-5xx', status: 599 }],
    [0, '', { kind: 'ambiguous', reason: 'unexpected-status', status: 0 }],
  ])('%i %s -> %j', (status, text, expected) => {
    expect(classify(status, text)).toEqual(expected);
  });

  it('a 128-character reference is the longest readable ack', () => {
    const ref = 'r'.repeat(128);
    expect(classify(200, JSON.stringify({ railReference: ref, acceptedAt: 'x' }))).toEqual({
      kind: 'acked',
      railReference: ref,
    });
  });
});
