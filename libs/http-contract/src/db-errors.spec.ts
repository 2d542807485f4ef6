import { QueryFailedError, TypeORMError } from 'typeorm';
import { DlockError } from '@dlock/lock-api';
import { databaseFailure } from './db-errors';
import { renderError } from './envelope';

function pgError(code: string, message = 'pg says no'): Error {
  return Object.assign(new Error(message), { code });
}
const wrapped = (err: Error) => new QueryFailedError('SELECT 1', [], err);

describe('databaseFailure', () => {
  it.each([
    ['28P01 bad password', wrapped(pgError('28P01'))],
    ['28000 no such role', pgError('28000')],
    ['53300 too many connections', wrapped(pgError('53300'))],
    ['57P03 starting up', pgError('57P03')],
    ['08001 cannot establish', pgError('08001')],
    ['ECONNREFUSED', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['pool acquire timeout', new Error('timeout exceeded when trying to connect')],
    ['connect timeout', new Error('Connection terminated due to connection timeout')],
    ['dead client', new Error('Client has encountered a connection error and is not queryable')],
    ['pool not made yet', new TypeORMError('Driver not Connected')],
  ])('%s: nothing was sent', (_name, err) => {
    expect(databaseFailure(err)).toBe('not-sent');
  });

  it.each([
    ['57P01 admin shutdown', wrapped(pgError('57P01'))],
    ['08006 connection failure', pgError('08006')],
    ['ECONNRESET', pgError('ECONNRESET')],
    ['ETIMEDOUT', pgError('ETIMEDOUT')],
    ['socket closed', wrapped(new Error('Connection terminated unexpectedly'))],
    ['57014 statement timeout', wrapped(pgError('57014'))],
  ])('%s: lost while a statement was in flight', (_name, err) => {
    expect(databaseFailure(err)).toBe('lost');
  });

  it.each([
    ['unique violation', wrapped(pgError('23505'))],
    ['syntax error', wrapped(pgError('42601'))],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['not an object', 'ECONNREFUSED'],
  ])('%s: not a database failure', (_name, err) => {
    expect(databaseFailure(err)).toBeUndefined();
  });
});

describe('renderError for database failures (README, Wire conventions)', () => {
  const trace = '0123456789abcdef0123456789abcdef';
  const unavailable = {
    status: 503,
    body: {
      code: 'UNAVAILABLE',
      message: 'a database this service needs is unavailable',
      retrySafe: true,
      traceId: trace,
    },
    unexpected: false,
  };
  const internal = {
    status: 500,
    body: { code: 'INTERNAL', message: 'internal error', retrySafe: false, traceId: trace },
    unexpected: true,
  };

  it('a connection never made is 503 retry-safe on any method', () => {
    for (const method of ['GET', 'POST', 'DELETE']) {
      expect(renderError(wrapped(pgError('28P01')), trace, method)).toEqual(unavailable);
    }
  });

  it('a connection lost mid-statement is 503 on a read, and stays 500 on a write (commit unknown)', () => {
    const lost = wrapped(new Error('Connection terminated unexpectedly'));
    expect(renderError(lost, trace, 'GET')).toEqual(unavailable);
    expect(renderError(lost, trace, 'HEAD')).toEqual(unavailable);
    expect(renderError(lost, trace, 'POST')).toEqual(internal);
    expect(renderError(lost, trace, 'DELETE')).toEqual(internal);
  });

  it('a service that mapped the failure itself keeps its code', () => {
    const mapped = new DlockError('NOT_LEADER', 'lockdb down', { cause: pgError('ECONNREFUSED') });
    expect(renderError(mapped, trace, 'GET').body.code).toBe('NOT_LEADER');
  });
});
