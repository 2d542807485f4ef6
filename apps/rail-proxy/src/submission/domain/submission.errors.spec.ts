import { intentFailureLevel } from './submission.errors';

/** The errors pg and pg-pool raise, shaped as they arrive in the admission's catch. */
function connectTimeout(): Error {
  return new Error('Connection terminated due to connection timeout', {
    cause: new Error('Connection terminated unexpectedly'),
  });
}

describe('intentFailureLevel', () => {
  it('warns when no connection to proxydb could be had: nothing was written, the caller retries', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
      code: 'ECONNREFUSED',
    });
    expect([connectTimeout(), refused].map(intentFailureLevel)).toEqual(['warn', 'warn']);
  });

  it('is an error for a connection lost mid-transaction or anything unknown', () => {
    const lost = new Error('Connection terminated unexpectedly');
    const constraint = Object.assign(new Error('duplicate key'), { code: '23505' });
    expect([lost, constraint, 'boom', undefined].map(intentFailureLevel)).toEqual([
      'error',
      'error',
      'error',
      'error',
    ]);
  });
});
