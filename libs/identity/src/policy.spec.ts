import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvError } from '@dlock/config';
import { PAYOUT_OPERATIONS } from '@dlock/payout-contract';
import { knownOperations, registerOperations, type OperationName } from './operations';
import {
  globToRegExp,
  loadPolicyFile,
  parsePolicy,
  PolicyError,
  subjectMatcher,
  subjectPatternProblem,
} from './policy';

// The shipped policies grant the payout services' operations too, as every dlock app registers.
registerOperations(PAYOUT_OPERATIONS);
const REPO = join(__dirname, '..', '..', '..');
const dev = loadPolicyFile(join(REPO, 'deploy', 'policy', 'dev-policy.yaml'));

describe('the development policy', () => {
  it.each<[string, OperationName, string | undefined, boolean]>([
    ['executor-1', 'locks.acquire', 'payout:acct-1', true],
    ['executor-1', 'locks.acquire', 'other:acct-1', false],
    ['executor-1', 'locks.acquire', undefined, false],
    ['executor-1', 'locks.revoke', undefined, false],
    ['executor-1', 'payouts.claim', undefined, true],
    ['executor-1', 'payouts.rail-outcome', undefined, true],
    ['executor-1', 'payouts.post', undefined, true],
    ['executor-1', 'payouts.abandon', undefined, false],
    ['executor-1', 'payouts.resolve', undefined, false],
    ['executor-1', 'accounts.fence-floor', undefined, false],
    ['executor-1', 'rail.submit', undefined, true],
    ['executor-1', 'accounts.create', undefined, false],
    ['reconciler', 'locks.acquire', 'payout:a', true],
    ['reconciler', 'payouts.resolve', undefined, true],
    ['reconciler', 'payouts.post', undefined, true],
    ['reconciler', 'payouts.claim', undefined, false],
    ['reconciler', 'rail.submit', undefined, false],
    ['reconciler', 'locks.revoke', undefined, false],
    ['operator', 'locks.revoke', undefined, true],
    ['operator', 'revocations.approve', undefined, true],
    ['operator-2', 'revocations.approve', undefined, true],
    ['operator', 'payouts.abandon', undefined, true],
    ['operator', 'accounts.fence-floor', undefined, true],
    ['operator', 'locks.acquire', 'payout:a', true],
    ['operator', 'locks.acquire', 'billing:a', false],
    ['operator', 'payouts.claim', undefined, false],
    ['operator', 'payouts.claim', undefined, false],
    ['operator', 'rail.submit', undefined, false],
    ['operator', 'locks.list', undefined, true],
    ['feed', 'accounts.create', undefined, true],
    ['feed', 'payouts.create', undefined, true],
    ['feed', 'payouts.claim', undefined, false],
    ['stranger', 'locks.inspect', undefined, false],
    ['executor', 'locks.acquire', 'payout:a', false],
    ['reconciler-2', 'payouts.resolve', undefined, false],
    // The reconciler's token probe (docs/reconciler.md); nobody else takes that key.
    ['reconciler', 'locks.acquire', 'dlock:token-probe', true],
    ['executor-1', 'locks.acquire', 'dlock:token-probe', false],
    // Operators are `operator` and `operator-<person>`, nothing else starting with "operator".
    ['operator-alice', 'locks.revoke', undefined, true],
    ['operatorevil', 'locks.revoke', undefined, false],
    ['operator-', 'locks.revoke', undefined, false],
    ['operators', 'payouts.abandon', undefined, false],
    // The console reads what its page polls and acts for people; it acts as nobody itself.
    ['console', 'identity.act-for', undefined, true],
    ['console', 'locks.list', undefined, true],
    ['console', 'safety-events.read', undefined, true],
    ['console', 'locks.revoke', undefined, false],
    ['console', 'revocations.approve', undefined, false],
    ['console', 'payouts.abandon', undefined, false],
    ['console', 'locks.acquire', 'payout:a', false],
    ['operator', 'identity.act-for', undefined, false],
    ['operator-alice', 'identity.act-for', undefined, false],
    ['executor-1', 'identity.act-for', undefined, false],
  ])('%s %s %s → %s', (subject, operation, key, allowed) => {
    expect(dev.decide(subject, operation, key).allowed).toBe(allowed);
  });

  it('asks for no second operator', () => {
    expect(dev.revoke).toEqual({ approvals: 1, approvalWindowMs: 300_000 });
  });

  it('says why it refused', () => {
    expect(dev.decide('executor-1', 'locks.revoke')).toEqual({
      allowed: false,
      reason: 'identity may not call locks.revoke',
    });
    expect(dev.decide('executor-1', 'locks.acquire', 'x')).toEqual({
      allowed: false,
      reason: 'identity may not lock this key',
    });
  });
});

describe('the test and production policies', () => {
  it('load; the test policy allows every operation to anyone', () => {
    const test = loadPolicyFile(join(REPO, 'deploy', 'policy', 'test-policy.yaml'));
    for (const op of knownOperations()) expect(test.decide('w', op, 'k').allowed).toBe(true);
    const prod = loadPolicyFile(join(REPO, 'k8s', 'base', 'auth-policy.yaml'));
    expect(prod.revoke.approvals).toBe(2);
    // The console's pods may act for people; nothing else may.
    expect(prod.decide('console-7d9f-abcde', 'identity.act-for').allowed).toBe(true);
    expect(prod.decide('console-7d9f-abcde', 'locks.revoke').allowed).toBe(false);
    expect(prod.decide('executor-7d9f-abcde', 'identity.act-for').allowed).toBe(false);
    expect(
      prod.decide('system:serviceaccount:dlock:operator-alice', 'identity.act-for').allowed,
    ).toBe(false);
  });

  const prod = loadPolicyFile(join(REPO, 'k8s', 'base', 'auth-policy.yaml'));
  it.each<[string, OperationName, string | undefined, boolean]>([
    // Pods of the executor and reconciler service accounts are identified by pod name.
    ['executor-7d9f5c-x2x4q', 'payouts.claim', undefined, true],
    ['executor-7d9f5c-x2x4q', 'locks.revoke', undefined, false],
    ['reconciler-6b7c-k2j9d', 'locks.acquire', 'dlock:token-probe', true],
    ['reconciler-6b7c-k2j9d', 'payouts.resolve', undefined, true],
    ['system:serviceaccount:dlock:operator-alice', 'revocations.approve', undefined, true],
    ['system:serviceaccount:dlock:operator', 'locks.revoke', undefined, false],
    ['system:serviceaccount:dlock:operatorevil', 'locks.revoke', undefined, false],
    ['system:serviceaccount:other:operator-alice', 'locks.revoke', undefined, false],
    ['system:serviceaccount:dlock:executor', 'payouts.claim', undefined, false],
    ['system:serviceaccount:dlock:feed', 'payouts.create', undefined, true],
  ])('k8s: %s %s %s → %s', (subject, operation, key, allowed) => {
    expect(prod.decide(subject, operation, key).allowed).toBe(allowed);
  });
});

describe('subject patterns (docs/security.md, "Subject patterns")', () => {
  it.each([
    ['operator-*', 'operator-alice', true],
    ['operator-*', 'operator-a-b', true],
    ['operator-*', 'operator', false],
    ['operator-*', 'operator-', false],
    ['operator-*', 'operatorevil', false],
    ['operator-*', 'xoperator-alice', false],
    ['system:serviceaccount:dlock:*', 'system:serviceaccount:dlock:x', true],
    ['system:serviceaccount:dlock:*', 'system:serviceaccount:dlockx:x', false],
    ['a.b.*', 'a.b.c', true],
    ['a.b.*', 'aXb.c', false],
    ['team/*', 'team/x', true],
    ['*', 'anyone', true],
    ['*', 'x', true],
    ['operator', 'operator', true],
    ['operator', 'operator-alice', false],
    ['operator', 'Operator', false],
  ])('%s matches %s: %s', (pattern, subject, matches) => {
    expect(subjectPatternProblem(pattern)).toBeUndefined();
    expect(subjectMatcher(pattern)(subject)).toBe(matches);
  });

  it.each([
    'operator*',
    '*-admin',
    'a*b',
    'exec*-*',
    '**',
    '-**',
    'a b',
    'operator-* ',
    '',
    'x'.repeat(257),
  ])('%j is refused', (pattern) => {
    expect(subjectPatternProblem(pattern)).toEqual(expect.any(String));
  });

  it.each(['operator*', '*-admin', 'a*b', 'exec*-*'])(
    'a policy naming %s does not load, with the line of the entry',
    (pattern) => {
      expect(problems(VALID.replace("'w-*'", `'${pattern}'`))).toEqual([
        `AUTH_POLICY p.yaml:7: identities.0.subject: "${pattern}" is not a subject pattern: ` +
          `an exact name, '*' (anyone), or a prefix ending in - : . or / followed by a final * (e.g. 'operator-*')`,
      ]);
    },
  );
});

describe('globToRegExp', () => {
  it.each([
    ['payout:*', 'payout:a-1', true],
    ['payout:*', 'payout:', true],
    ['payout:*', 'xpayout:a', false],
    ['a.b', 'aXb', false],
    ['*-x', 'a-b-x', true],
    ['exact', 'exact2', false],
  ])('%s matches %s: %s', (pattern, value, matches) => {
    expect(globToRegExp(pattern).test(value)).toBe(matches);
  });
});

const VALID = `version: 1
roles:
  worker:
    lockKeys: ['payout:*']
    operations: [locks.acquire]
identities:
  - subject: 'w-*'
    roles: [worker]
`;

function problems(text: string): string[] {
  try {
    parsePolicy(text, 'p.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyError);
    expect(err).toBeInstanceOf(EnvError);
    return (err as PolicyError).problems;
  }
  throw new Error('an invalid policy was accepted');
}

describe('policy validation names the line and the entry', () => {
  it('accepts a valid policy, JSON too', () => {
    expect(parsePolicy(VALID, 'p.yaml').decide('w-1', 'locks.acquire', 'payout:1').allowed).toBe(
      true,
    );
    const json = JSON.stringify({
      version: 1,
      revoke: { approvals: 2, approvalWindowMs: 60000 },
      roles: { ops: { operations: ['locks.revoke'] } },
      identities: [{ subject: 'ops', roles: ['ops'] }],
    });
    expect(parsePolicy(json, 'p.json').revoke).toEqual({ approvals: 2, approvalWindowMs: 60000 });
  });

  it.each<[string, string, string]>([
    [
      'an unknown operation',
      VALID.replace('[locks.acquire]', '[locks.acquire, payouts.clam]'),
      'AUTH_POLICY p.yaml:5: roles.worker.operations.1: unknown operation "payouts.clam"',
    ],
    [
      'an unknown role',
      VALID.replace('roles: [worker]', 'roles: [worker, admin]'),
      'AUTH_POLICY p.yaml:8: identities.0.roles.1: unknown role "admin"',
    ],
    [
      'acquire without key patterns',
      VALID.replace("    lockKeys: ['payout:*']\n", ''),
      'AUTH_POLICY p.yaml:4: roles.worker: grants locks.acquire, so lockKeys must name the keys it may lock',
    ],
    [
      'a bad key pattern',
      VALID.replace("'payout:*'", "'payout/*'"),
      'AUTH_POLICY p.yaml:4: roles.worker.lockKeys.0: "payout/*" is not a lock key pattern ([a-zA-Z0-9:._-] and *)',
    ],
    [
      'an unknown field',
      VALID.replace('version: 1', 'version: 1\nadmins: [me]'),
      'AUTH_POLICY p.yaml:2: admins: unknown field (known: version,revoke,roles,identities)',
    ],
    [
      'a wrong version',
      VALID.replace('version: 1', 'version: 2'),
      'AUTH_POLICY p.yaml:1: version: must be 1',
    ],
    [
      'three approvals',
      `${VALID}revoke:\n  approvals: 3\n`,
      'AUTH_POLICY p.yaml:10: revoke.approvals: must be 1 (single-step) or 2 (two operators)',
    ],
    [
      'a too short approval window',
      `${VALID}revoke:\n  approvals: 2\n  approvalWindowMs: 5\n`,
      'AUTH_POLICY p.yaml:11: revoke.approvalWindowMs: must be an integer 1000..86400000',
    ],
    [
      'an empty subject',
      VALID.replace("subject: 'w-*'", "subject: ''"),
      'AUTH_POLICY p.yaml:7: identities.0.subject: must be a subject pattern of 1..256 printable characters',
    ],
    [
      'no identities',
      VALID.replace(/identities:[\s\S]*$/, 'identities: []\n'),
      'AUTH_POLICY p.yaml:6: identities: must be a non-empty list (at most 1000 entries)',
    ],
    [
      'not a mapping',
      '- a\n- b\n',
      'AUTH_POLICY p.yaml:1: (top level): must be a mapping with version, roles and identities',
    ],
  ])('%s', (_name, text, expected) => {
    expect(problems(text)).toContain(expected);
  });

  it('reports a YAML syntax error with its line', () => {
    const [first] = problems('version: 1\nroles: {a: [\n');
    expect(first).toMatch(/^AUTH_POLICY p\.yaml:\d+: /);
  });

  it('reports a duplicate key', () => {
    expect(problems('version: 1\nversion: 1\n')[0]).toMatch(/^AUTH_POLICY p\.yaml:2: .*unique/i);
  });

  it('reports every problem at once', () => {
    const text = VALID.replace('[locks.acquire]', '[nope]').replace('[worker]', '[ghost]');
    expect(problems(text)).toHaveLength(2);
  });

  it('a missing file is a PolicyError naming the path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dlock-policy-'));
    try {
      writeFileSync(join(dir, 'ok.yaml'), VALID);
      expect(loadPolicyFile(join(dir, 'ok.yaml')).revoke.approvals).toBe(1);
      expect(() => loadPolicyFile(join(dir, 'missing.yaml'))).toThrow(
        /AUTH_POLICY: cannot read .*missing\.yaml/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('shared identities and plain subjects (docs/security.md, "Identities")', () => {
  const policy = parsePolicy(
    `version: 1
revoke: { approvals: 2, approvalWindowMs: 60000 }
roles:
  operator:
    operations: [locks.revoke, revocations.approve]
identities:
  - { subject: operator, roles: [operator], shared: true }
  - { subject: 'operator-*', roles: [operator] }
`,
    'p.yaml',
  );

  it('marks only the subjects of a shared entry as shared', () => {
    expect(policy.isShared('operator')).toBe(true);
    expect(policy.isShared('operator-alice')).toBe(false);
    expect(policy.decide('operator', 'revocations.approve')).toEqual({ allowed: true });
  });

  it('matches no subject outside the plain set, whatever the pattern', () => {
    expect(policy.decide('operator-alice', 'revocations.approve')).toEqual({ allowed: true });
    expect(policy.decide('operator-alice\u200b', 'revocations.approve')).toEqual({
      allowed: false,
      reason: 'subject has characters outside the plain set',
    });
  });

  it('refuses a shared flag that is no boolean, naming its line', () => {
    expect(
      problems(VALID.replace('roles: [worker]', "roles: [worker]\n    shared: 'yes'")),
    ).toEqual(['AUTH_POLICY p.yaml:9: identities.0.shared: must be true or false']);
  });

  it('refuses a pattern with a character outside the plain set', () => {
    expect(problems(VALID.replace("'w-*'", "'w\u200b-*'"))[0]).toContain(
      'is not a subject pattern',
    );
  });
});
