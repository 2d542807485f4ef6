import { registerErrorCodes, ValidationError, type ErrorCode } from '@dlock/lock-api';
import {
  RequestDeadline,
  boundedWaitMs,
  deadlineWithin,
  parseRequestDeadlineMs,
  refuseShortBudget,
  requestDeadlineHeader,
} from './deadline';

describe('X-Request-Deadline-Ms', () => {
  it('absent is "no caller budget"; a positive integer up to one hour is the budget', () => {
    expect(parseRequestDeadlineMs(undefined)).toBeUndefined();
    expect(parseRequestDeadlineMs('1')).toBe(1);
    expect(parseRequestDeadlineMs('3000')).toBe(3_000);
    expect(parseRequestDeadlineMs(['250'])).toBe(250);
    expect(parseRequestDeadlineMs('3600000')).toBe(3_600_000);
  });

  it.each([
    '',
    '0',
    '-1',
    '+5',
    ' 5',
    '5 ',
    '1e3',
    '1.5',
    '0x10',
    '007',
    '3600001',
    '9007199254740993',
    '99999999999999999999999',
    '500, 600',
  ])('refuses %p as VALIDATION_FAILED naming the header', (raw) => {
    expect(() => parseRequestDeadlineMs(raw)).toThrow(ValidationError);
    expect(() => parseRequestDeadlineMs(raw)).toThrow(
      expect.objectContaining({
        details: { fields: [expect.objectContaining({ field: 'X-Request-Deadline-Ms' })] },
      }),
    );
  });

  it('refuses a repeated header', () => {
    expect(() => parseRequestDeadlineMs(['500', '600'])).toThrow(ValidationError);
  });

  it('callers send whole milliseconds, at least 1 and at most the maximum', () => {
    expect(requestDeadlineHeader(3_000)).toEqual({ 'x-request-deadline-ms': '3000' });
    expect(requestDeadlineHeader(999.9)).toEqual({ 'x-request-deadline-ms': '999' });
    expect(requestDeadlineHeader(0.4)).toEqual({ 'x-request-deadline-ms': '1' });
    expect(requestDeadlineHeader(10_000_000)).toEqual({ 'x-request-deadline-ms': '3600000' });
    for (const ms of [1, 999.9, 10_000_000]) {
      const sent = requestDeadlineHeader(ms)['x-request-deadline-ms'];
      expect(parseRequestDeadlineMs(sent)).toBeGreaterThan(0);
    }
  });
});

describe('bounding a server step by the caller budget', () => {
  const arrival = 1_000;

  it('counts down from arrival and never below zero', () => {
    const d = new RequestDeadline(500, arrival);
    expect(d.remainingMs(arrival)).toBe(500);
    expect(d.remainingMs(arrival + 200)).toBe(300);
    expect(d.remainingMs(arrival + 900)).toBe(0);
  });

  it('takes the smaller of the own limit and the remaining budget less the margin', () => {
    const d = new RequestDeadline(500, arrival);
    expect(boundedWaitMs(2_000, undefined, 100)).toBe(2_000);
    expect(boundedWaitMs(2_000, d, 100, arrival)).toBe(400);
    expect(boundedWaitMs(300, d, 100, arrival)).toBe(300);
    expect(boundedWaitMs(2_000, d, 100, arrival + 450)).toBe(0);
  });

  it("a server's own budget applies when the caller has more left, or sent none", () => {
    const caller = new RequestDeadline(500);
    expect(deadlineWithin(caller, 9_000)).toBe(caller);
    const own = deadlineWithin(new RequestDeadline(60_000), 9_000);
    expect(own.budgetMs).toBe(9_000);
    expect(deadlineWithin(undefined, 9_000).budgetMs).toBe(9_000);
  });

  it('refuses with a retry-safe 503 when less than the minimum is left', () => {
    expect(() => refuseShortBudget(undefined, 150)).not.toThrow();
    expect(() => refuseShortBudget(new RequestDeadline(10_000), 150)).not.toThrow();
    expect(() => refuseShortBudget(new RequestDeadline(100), 150)).toThrow(
      expect.objectContaining({
        code: 'UNAVAILABLE',
        httpStatus: 503,
        details: { reason: 'deadline-too-short', remainingMs: expect.any(Number), requiredMs: 150 },
      }),
    );
    // An app's own 503 (registered as its module would) for a peer it needs.
    registerErrorCodes({ UPSTREAM_UNAVAILABLE: { httpStatus: 503, retrySafe: true } });
    const own = 'UPSTREAM_UNAVAILABLE' as ErrorCode;
    expect(() => refuseShortBudget(new RequestDeadline(100), 150, own)).toThrow(
      expect.objectContaining({ code: own, httpStatus: 503, retrySafe: true }),
    );
  });
});
