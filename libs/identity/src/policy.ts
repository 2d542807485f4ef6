import { readFileSync } from 'node:fs';
import type { Document, LineCounter } from 'yaml';
import { EnvError } from '@dlock/config/env';
import { assertOperation, isOperationName, type OperationName } from './operations';
import { plainSubject } from './subjects';

/**
 * The authorisation policy (docs/security.md, "Authorisation policy"): which
 * identity may call which operation, which lock keys it may take, and whether a
 * force-revoke needs a second operator. Read and validated once at boot; every
 * problem names its line and entry, and the service does not start.
 */

/** A revoke takes effect on the request alone (1) or once a different operator approves (2). */
export interface RevokePolicy {
  approvals: 1 | 2;
  approvalWindowMs: number;
}

export interface RoleSpec {
  operations: readonly OperationName[];
  /** Key patterns for `locks.acquire`; required when the role may acquire. */
  lockKeys: readonly string[];
}

export interface PolicySpec {
  revoke: RevokePolicy;
  roles: Readonly<Record<string, RoleSpec>>;
  identities: readonly IdentitySpec[];
}

/**
 * Who matches `subject` gets `roles`. `shared: true` marks an identity several
 * people use (a team account): it may act, but never counts as the second
 * person of a two-person revoke (docs/security.md, "Authorisation policy").
 */
export interface IdentitySpec {
  subject: string;
  roles: readonly string[];
  shared?: boolean;
}

export type PolicyDecision = { allowed: true } | { allowed: false; reason: string };

export const POLICY_VERSION = 1;
export const APPROVAL_WINDOW_MIN_MS = 1_000;
export const APPROVAL_WINDOW_MAX_MS = 86_400_000;
const PATTERN_MAX_LENGTH = 256;
const ENTRIES_MAX = 1000;
/** Subjects whose grants are remembered; beyond this the memo starts over (bounded memory). */
const SUBJECTS_CACHED_MAX = 10_000;
const LOCK_KEY_PATTERN = /^[a-zA-Z0-9:._*-]+$/;
const ROLE_NAME = /^[a-z][a-z0-9-]{0,63}$/;

/** A bad policy file: stops the service like any other configuration error. */
export class PolicyError extends EnvError {
  override readonly name = 'PolicyError';
}

/**
 * Lock-key patterns: `*` matches any run of characters (including none);
 * every other character is literal.
 */
export function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`);
}

/**
 * The grammar of a subject pattern (docs/security.md, "Subject patterns"):
 * an exact name; the single `*` (anyone); or a prefix ending in a separator
 * (`-`, `:`, `.`, `/`) then `*` as the last character, where `*` stands for one
 * or more characters. So `operator-*` names `operator-alice` but neither
 * `operator` nor `operator-`, and `operator*` (which would also name
 * `operatorevil`) is no pattern at all.
 */
const SUBJECT_EXACT = /^[A-Za-z0-9][A-Za-z0-9._:@+=/|~-]*$/;
const SUBJECT_PREFIX = /^[A-Za-z0-9][A-Za-z0-9._:@+=/|~-]*[-:./]\*$/;

/** Why `pattern` is not a subject pattern, or undefined when it is one. */
export function subjectPatternProblem(pattern: unknown): string | undefined {
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > PATTERN_MAX_LENGTH)
    return `must be a subject pattern of 1..${PATTERN_MAX_LENGTH} printable characters`;
  if (pattern === '*' || SUBJECT_EXACT.test(pattern) || SUBJECT_PREFIX.test(pattern))
    return undefined;
  return (
    `${show(pattern)} is not a subject pattern: an exact name, '*' (anyone), or a prefix ` +
    `ending in - : . or / followed by a final * (e.g. 'operator-*')`
  );
}

/** Matches subjects of a pattern subjectPatternProblem accepts (its `*` is one or more characters). */
export function subjectMatcher(pattern: string): (subject: string) => boolean {
  if (pattern === '*') return (subject) => subject.length > 0;
  if (!pattern.endsWith('*')) return (subject) => subject === pattern;
  const prefix = pattern.slice(0, -1);
  return (subject) => subject.length > prefix.length && subject.startsWith(prefix);
}

interface CompiledRole {
  operations: ReadonlySet<string>;
  lockKeys: readonly RegExp[];
}

/** The policy in force: answers "may `subject` do `operation` (on `lockKey`)?". */
export class AuthPolicy {
  private readonly identities: {
    subject: (s: string) => boolean;
    roles: CompiledRole[];
    shared: boolean;
  }[];
  private readonly memo = new Map<string, CompiledRole[]>();

  constructor(readonly spec: PolicySpec) {
    const roles = new Map<string, CompiledRole>();
    for (const [name, role] of Object.entries(spec.roles)) {
      roles.set(name, {
        operations: new Set(role.operations),
        lockKeys: role.lockKeys.map(globToRegExp),
      });
    }
    this.identities = spec.identities.map((entry) => ({
      subject: subjectMatcher(entry.subject),
      roles: entry.roles.map((r) => roles.get(r)!),
      shared: entry.shared === true,
    }));
  }

  get revoke(): RevokePolicy {
    return this.spec.revoke;
  }

  /**
   * True when `subject` is, or may be, used by several people (an identity
   * entry marked `shared` matches it): such a subject is no second person.
   */
  isShared(subject: string): boolean {
    return this.identities.some((e) => e.shared && e.subject(subject));
  }

  decide(subject: string, operation: OperationName, lockKey?: string): PolicyDecision {
    assertOperation(operation);
    // The verifier lets in only plain subjects; a policy matches nothing else either.
    if (plainSubject(subject) !== subject) {
      return { allowed: false, reason: 'subject has characters outside the plain set' };
    }
    const granting = this.rolesOf(subject).filter((r) => r.operations.has(operation));
    if (granting.length === 0) {
      return { allowed: false, reason: `identity may not call ${operation}` };
    }
    if (operation !== 'locks.acquire') return { allowed: true };
    if (lockKey !== undefined && granting.some((r) => r.lockKeys.some((p) => p.test(lockKey)))) {
      return { allowed: true };
    }
    return { allowed: false, reason: 'identity may not lock this key' };
  }

  /** Every role of every identity entry the subject matches (their union is what it may do). */
  private rolesOf(subject: string): CompiledRole[] {
    let roles = this.memo.get(subject);
    if (roles === undefined) {
      roles = this.identities.filter((e) => e.subject(subject)).flatMap((e) => e.roles);
      if (this.memo.size >= SUBJECTS_CACHED_MAX) this.memo.clear();
      this.memo.set(subject, roles);
    }
    return roles;
  }
}

/** Reads, parses and validates a policy file; any problem is a PolicyError naming file and line. */
export function loadPolicyFile(path: string): AuthPolicy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new PolicyError([`AUTH_POLICY: cannot read ${path}: ${(err as Error).message}`]);
  }
  return parsePolicy(text, path);
}

const loaded = new Map<string, AuthPolicy>();

/**
 * The policy of `path`, read and validated on first use and kept for the
 * life of the process: the authorisation guard and a service's own rules (the
 * lock-server's revoke approvals) see the same policy, read once at start.
 */
export function policyFile(path: string): AuthPolicy {
  let policy = loaded.get(path);
  if (policy === undefined) {
    policy = loadPolicyFile(path);
    loaded.set(path, policy);
  }
  return policy;
}

let parser: typeof import('yaml') | undefined;

/**
 * The YAML parser, read from disk when the first policy is parsed: the services that read no
 * policy (the rail stub, docs/security.md) never load its ~70 modules.
 */
function yaml(): typeof import('yaml') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (parser ??= require('yaml') as typeof import('yaml'));
}

/** Parses YAML (or JSON, which is YAML) and validates every entry. */
export function parsePolicy(text: string, source: string): AuthPolicy {
  const { LineCounter: Lines, parseDocument } = yaml();
  const lines = new Lines();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new PolicyError(
      doc.errors.map((e) => `AUTH_POLICY ${source}:${lineOf(lines, e.pos[0])}: ${e.message}`),
    );
  }
  const check = new Checker(doc, lines, source);
  const spec = check.policy(doc.toJS() as unknown);
  if (check.problems.length > 0 || spec === undefined) throw new PolicyError(check.problems);
  return new AuthPolicy(spec);
}

function lineOf(lines: LineCounter, offset: number): number {
  return lines.linePos(offset).line;
}

type Path = (string | number)[];

/** Collects every problem of a parsed policy with the line of the entry it is about. */
class Checker {
  readonly problems: string[] = [];

  constructor(
    private readonly doc: Document,
    private readonly lines: LineCounter,
    private readonly source: string,
  ) {}

  problem(path: Path, message: string): void {
    const entry = path.length === 0 ? '(top level)' : path.join('.');
    this.problems.push(`AUTH_POLICY ${this.source}:${this.lineAt(path)}: ${entry}: ${message}`);
  }

  /** The line of the deepest node of `path` that exists (a missing key: its parent's line). */
  private lineAt(path: Path): number {
    for (let depth = path.length; depth >= 0; depth--) {
      const node: unknown =
        depth === 0 ? this.doc.contents : this.doc.getIn(path.slice(0, depth), true);
      if (yaml().isNode(node) && node.range) return lineOf(this.lines, node.range[0]);
    }
    return 1;
  }

  policy(value: unknown): PolicySpec | undefined {
    if (!isRecord(value) || !yaml().isMap(this.doc.contents)) {
      this.problem([], 'must be a mapping with version, roles and identities');
      return undefined;
    }
    this.onlyKeys([], value, ['version', 'revoke', 'roles', 'identities']);
    if (value.version !== POLICY_VERSION) this.problem(['version'], `must be ${POLICY_VERSION}`);
    const revoke = this.revoke(value.revoke);
    const roles = this.roles(value.roles);
    const identities = this.identities(value.identities, roles);
    return { revoke, roles, identities };
  }

  private revoke(value: unknown): RevokePolicy {
    const single: RevokePolicy = { approvals: 1, approvalWindowMs: 300_000 };
    if (value === undefined) return single;
    if (!isRecord(value)) {
      this.problem(['revoke'], 'must be a mapping {approvals, approvalWindowMs}');
      return single;
    }
    this.onlyKeys(['revoke'], value, ['approvals', 'approvalWindowMs']);
    const approvals = value.approvals ?? 1;
    if (approvals !== 1 && approvals !== 2) {
      this.problem(['revoke', 'approvals'], 'must be 1 (single-step) or 2 (two operators)');
    }
    const windowMs = value.approvalWindowMs ?? single.approvalWindowMs;
    if (
      !Number.isInteger(windowMs) ||
      (windowMs as number) < APPROVAL_WINDOW_MIN_MS ||
      (windowMs as number) > APPROVAL_WINDOW_MAX_MS
    ) {
      this.problem(
        ['revoke', 'approvalWindowMs'],
        `must be an integer ${APPROVAL_WINDOW_MIN_MS}..${APPROVAL_WINDOW_MAX_MS}`,
      );
    }
    return { approvals: approvals === 2 ? 2 : 1, approvalWindowMs: Number(windowMs) };
  }

  private roles(value: unknown): Record<string, RoleSpec> {
    const roles: Record<string, RoleSpec> = {};
    if (!isRecord(value) || Object.keys(value).length === 0) {
      this.problem(['roles'], 'must be a non-empty mapping of role name to grants');
      return roles;
    }
    for (const [name, role] of Object.entries(value)) {
      const path = ['roles', name];
      if (!ROLE_NAME.test(name)) this.problem(path, 'role names are lower-case [a-z0-9-]');
      if (!isRecord(role)) {
        this.problem(path, 'must be a mapping {operations, lockKeys?}');
        continue;
      }
      this.onlyKeys(path, role, ['operations', 'lockKeys']);
      const operations = this.list(
        [...path, 'operations'],
        role.operations,
        (op, at) => isOperationName(op) || this.problem(at, `unknown operation ${show(op)}`),
      ) as OperationName[];
      const lockKeys = (
        role.lockKeys === undefined
          ? []
          : this.list(
              [...path, 'lockKeys'],
              role.lockKeys,
              (key, at) =>
                (typeof key === 'string' &&
                  key.length <= PATTERN_MAX_LENGTH &&
                  LOCK_KEY_PATTERN.test(key)) ||
                this.problem(at, `${show(key)} is not a lock key pattern ([a-zA-Z0-9:._-] and *)`),
            )
      ) as string[];
      if (operations.includes('locks.acquire') && lockKeys.length === 0) {
        this.problem(path, 'grants locks.acquire, so lockKeys must name the keys it may lock');
      }
      roles[name] = { operations, lockKeys };
    }
    return roles;
  }

  private identities(value: unknown, roles: Record<string, RoleSpec>): IdentitySpec[] {
    const entries = this.list(['identities'], value, (entry, at) => {
      if (!isRecord(entry)) return this.problem(at, 'must be a mapping {subject, roles}');
      this.onlyKeys(at, entry, ['subject', 'roles', 'shared']);
      if (entry.shared !== undefined && typeof entry.shared !== 'boolean')
        this.problem([...at, 'shared'], 'must be true or false');
      const problem = subjectPatternProblem(entry.subject);
      if (problem !== undefined) this.problem([...at, 'subject'], problem);
      this.list([...at, 'roles'], entry.roles, (role, roleAt) =>
        typeof role === 'string' && Object.hasOwn(roles, role)
          ? true
          : this.problem(roleAt, `unknown role ${show(role)}`),
      );
      return true;
    });
    return entries as IdentitySpec[];
  }

  /** A non-empty bounded list; `each` reports a bad item (returns false) or accepts it. */
  private list(path: Path, value: unknown, each: (item: unknown, at: Path) => boolean | void) {
    if (!Array.isArray(value) || value.length === 0 || value.length > ENTRIES_MAX) {
      this.problem(path, `must be a non-empty list (at most ${ENTRIES_MAX} entries)`);
      return [];
    }
    return value.filter((item, i) => each(item, [...path, i]) === true);
  }

  private onlyKeys(path: Path, value: Record<string, unknown>, known: string[]): void {
    for (const key of Object.keys(value)) {
      if (!known.includes(key))
        this.problem([...path, key], `unknown field (known: ${known.join(',')})`);
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}
