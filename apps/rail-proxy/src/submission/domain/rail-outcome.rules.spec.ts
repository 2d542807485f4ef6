import { PeerUnavailableError } from '@dlock/http-client';
import { classifyAnswer, classifyFailure } from './rail-outcome.rules';

const ACK = JSON.stringify({ railReference: 'rr-1', acceptedAt: '2030-01-01T00:00:00.000Z' });

/**
 * The proxy's reading of a rail answer (docs/rail.md, "Outcomes"). Only a
 * well-formed 200 is an ack and only the rail's explicit decline (402) proves
 * nothing was booked; every other answer may have moved money and is ambiguous.
 */
describe('classifyAnswer: what a rail answer proves', () => {
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
    expect(classifyAnswer(status, text)).toEqual(expected);
  });

  it('a 128-character reference is the longest readable ack', () => {
    const ref = 'r'.repeat(128);
    expect(classifyAnswer(200, JSON.stringify({ railReference: ref, acceptedAt: 'x' }))).toEqual({
      kind: 'acked',
      railReference: ref,
    });
  });
});

const timeout = new DOMException('timed out after 400 ms', 'TimeoutError');
const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
const unavailable = (phase: 'connect' | 'response', cause?: unknown) =>
  new PeerUnavailableError('rail', phase, 'rail: failed', cause);

/**
 * A rail call that ended without an answer. Only a connection that closed
 * before a byte was written presented nothing (the intent is withdrawn);
 * every failure after the write may have paid (docs/rail.md, "Outcomes").
 */
describe('classifyFailure: what a call without an answer proves', () => {
  it.each([
    [
      'closed before the write',
      unavailable('connect'),
      { kind: 'not-presented', reason: 'connection-closed-before-write' },
    ],
    [
      'closed before the write, whatever the cause',
      unavailable('connect', timeout),
      { kind: 'not-presented', reason: 'connection-closed-before-write' },
    ],
    [
      'no answer in time',
      unavailable('response', timeout),
      { kind: 'ambiguous', reason: 'read-timeout' },
    ],
    [
      'an answer past the size cap',
      unavailable('response', new RangeError('answer exceeds 65536 bytes')),
      { kind: 'ambiguous', reason: 'malformed-ack' },
    ],
    [
      'a reset after the write',
      unavailable('response', reset),
      { kind: 'ambiguous', reason: 'connection-reset' },
    ],
    ['no cause', unavailable('response'), { kind: 'ambiguous', reason: 'connection-reset' }],
    [
      'another DOMException',
      unavailable('response', new DOMException('aborted', 'AbortError')),
      { kind: 'ambiguous', reason: 'connection-reset' },
    ],
    [
      'a timeout that is no unavailable error',
      Object.assign(new Error('x'), { cause: timeout }),
      { kind: 'ambiguous', reason: 'read-timeout' },
    ],
    ['anything else', new TypeError('bug'), { kind: 'ambiguous', reason: 'connection-reset' }],
    ['not even an error', null, { kind: 'ambiguous', reason: 'connection-reset' }],
  ])('%s', (_what, err, expected) => {
    expect(classifyFailure(err)).toEqual(expected);
  });
});
