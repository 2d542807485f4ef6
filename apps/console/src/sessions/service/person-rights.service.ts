import {
  ForbiddenError,
  subjectMatcher,
  type AuthPolicy,
  type OperationName,
} from '@dlock/identity';

/**
 * What the person signed in may see, by the services' own policy
 * (docs/console.md, "What a person sees"): the console reads as itself, so
 * it checks here, against the person's roles, what it passes on to them.
 */
export class PersonRights {
  private readonly entries: readonly ((subject: string) => boolean)[];

  constructor(private readonly policy: AuthPolicy) {
    // Every identity entry names at least one role (the policy's checker refuses an empty list).
    this.entries = policy.spec.identities.map((e) => subjectMatcher(e.subject));
  }

  /** Whether the policy gives `subject` any role: nobody else signs in. */
  hasRole(subject: string): boolean {
    return this.entries.some((matches) => matches(subject));
  }

  may(subject: string, operation: OperationName): boolean {
    return this.policy.decide(subject, operation).allowed;
  }

  /** 403 for a verified person the policy gives no role (nothing is started for them). */
  admit(subject: string): void {
    if (!this.hasRole(subject))
      throw new ForbiddenError('this identity has no role in the policy: it may not sign in', {
        reason: 'policy',
      });
  }
}
