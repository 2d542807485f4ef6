/**
 * `npm run identity:token -- --subject operator-alice [--audience console] [--ttl-sec 3600]
 * [--dir .dlock/identity]`: prints one token minted by the development issuer
 * that `npm start` keeps under .dlock/identity (docs/security.md). With the
 * default audience it is a person's token for signing in to the console
 * (docs/console.md); with a service's name, a token for calling that service.
 * Exit 0 with the token on stdout, 2 on bad arguments or no issuer.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEV_TOKEN_TTL_MAX_SEC, DevIssuer, OPERATOR_AUDIENCE } from '@dlock/identity';

const PERSON_TOKEN_TTL_SEC = 3_600;
const USAGE =
  'usage: identity:token -- --subject <name> [--audience console] [--ttl-sec 1..3600] [--dir <issuer dir>]';
/** What a policy can name: printable ASCII without spaces (docs/security.md). */
const SUBJECT = /^[\x21-\x7e]{1,256}$/;
const AUDIENCE = /^[a-z][a-z0-9-]{0,62}$/;

interface Args {
  subject: string;
  audience: string;
  ttlSec: number;
  dir: string;
}

function fail(message: string): never {
  console.error(`[identity:token] ${message}\n${USAGE}`);
  process.exit(2);
}

function parseArgs(argv: string[]): Args {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (!['--subject', '--audience', '--ttl-sec', '--dir'].includes(flag))
      fail(`unknown argument ${flag}`);
    if (value === undefined || values.has(flag)) fail(`${flag} needs exactly one value`);
    values.set(flag, value);
  }
  const subject = values.get('--subject') ?? fail('--subject is required');
  if (!SUBJECT.test(subject)) fail('--subject must be 1..256 printable ASCII without spaces');
  const audience = values.get('--audience') ?? OPERATOR_AUDIENCE;
  if (!AUDIENCE.test(audience)) fail('--audience must be a lower-case service name');
  const ttlText = values.get('--ttl-sec') ?? String(PERSON_TOKEN_TTL_SEC);
  const ttlSec = /^[1-9][0-9]{0,4}$/.test(ttlText) ? Number(ttlText) : NaN;
  if (!(ttlSec <= DEV_TOKEN_TTL_MAX_SEC)) fail(`--ttl-sec must be 1..${DEV_TOKEN_TTL_MAX_SEC}`);
  // dist/scripts/ → the repository's .dlock/identity, where npm start keeps the issuer.
  const dir = resolve(values.get('--dir') ?? join(__dirname, '..', '..', '.dlock', 'identity'));
  return { subject, audience, ttlSec, dir };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  // Never a fresh issuer: a token from keys no service trusts would only confuse.
  if (!existsSync(join(args.dir, 'issuer-keys.json')))
    fail(`no development issuer in ${args.dir}: run \`npm start\` once first`);
  const issuer = await DevIssuer.open(args.dir);
  console.log(await issuer.mint(args.subject, args.audience, { ttlSec: args.ttlSec }));
}

main().catch((err: unknown) => {
  console.error('[identity:token] failed:', err);
  process.exit(1);
});
