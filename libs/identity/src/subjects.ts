/**
 * The one spelling of a subject (docs/security.md, "Identities"): ASCII
 * letters and digits, then also `. _ : @ + = / | ~ -`, 1..256 characters.
 * Everything a policy matches, a revoke records and an approval compares is a
 * subject of this set. Anything else (an invisible or look-alike character, a
 * space, a control character) is refused where the subject comes in, never
 * mapped onto a plain one: folding would let one issuer's two identities act
 * as one, and an invisible character would let one person be two.
 */
const PLAIN_SUBJECT = /^[A-Za-z0-9][A-Za-z0-9._:@+=/|~-]{0,255}$/;

/** `raw` when it is a plain subject (NFC, which leaves ASCII as it is); undefined otherwise. */
export function plainSubject(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const subject = raw.normalize('NFC');
  return PLAIN_SUBJECT.test(subject) ? subject : undefined;
}
