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

/**
 * `raw` itself when it is a plain subject; undefined otherwise. Not even NFC is
 * applied: it maps some characters onto ASCII (the Kelvin sign onto `K`).
 */
export function plainSubject(raw: unknown): string | undefined {
  return typeof raw === 'string' && PLAIN_SUBJECT.test(raw) ? raw : undefined;
}
