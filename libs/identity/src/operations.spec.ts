import {
  assertOperation,
  BUILT_IN_OPERATIONS,
  isOperationName,
  knownOperations,
  registerOperations,
} from './operations';
import { parsePolicy } from './policy';

const POLICY = `
version: 1
roles:
  refunds:
    operations: [refunds.create]
identities:
  - subject: 'refunds-*'
    roles: [refunds]
`;

describe('the operations a policy may name', () => {
  it('knows the lock service and every service by itself, and nothing of an app', () => {
    expect(knownOperations()).toEqual([...BUILT_IN_OPERATIONS]);
    expect(isOperationName('locks.acquire')).toBe(true);
    expect(isOperationName('refunds.create')).toBe(false);
  });

  it('refuses a policy naming an operation no app registered, and a decision on one', () => {
    expect(() => parsePolicy(POLICY, 'p.yaml')).toThrow(/unknown operation "refunds.create"/);
    expect(() => assertOperation('refunds.create')).toThrow(/never registered/);
  });

  it("accepts an app's operations once registered, and only well-formed names", () => {
    expect(() => registerOperations(['Refunds create'])).toThrow(/not <area>.<verb>/);
    registerOperations(['refunds.create']);
    registerOperations(['refunds.create']);
    const policy = parsePolicy(POLICY, 'p.yaml');
    expect(policy.decide('refunds-1', 'refunds.create').allowed).toBe(true);
    expect(policy.decide('someone', 'refunds.create').allowed).toBe(false);
  });
});
