/**
 * `npm run identity:token -- --subject operator-alice [--audience console] [--ttl-sec 3600]
 * [--dir .dlock/identity] [--out FILE]`: one token minted by the development issuer
 * that `npm start` keeps under .dlock/identity (docs/security.md). With the
 * default audience it is a person's token for signing in to the console
 * (docs/console.md); with a service's name, a token for calling that service.
 * Exit 0 with the token alone on stdout (or alone in FILE, 0600), what it is on
 * stderr; 2 on bad arguments or no issuer.
 *
 * npm prints its `> dlock@… identity:token` banner on stdout before this runs,
 * so `$(npm run identity:token …)` captures the banner too; `--out FILE` is
 * the form that works as written (docs/security.md, "Acting for a person").
 */
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEV_TOKEN_TTL_MAX_SEC, DevIssuer, OPERATOR_AUDIENCE } from '@dlock/identity';

const PERSON_TOKEN_TTL_SEC = 3_600;
const USAGE =
  'usage: identity:token -- --subject <name> [--audience console] [--ttl-sec 1..3600] [--dir <issuer dir>] [--out <file>]';
/** What a policy can name: printable ASCII without spaces (docs/security.md). */
const SUBJECT = /^[\x21-\x7e]{1,256}$/;
const AUDIENCE = /^[a-z][a-z0-9-]{0,62}$/;

interface Args {
  subject: string;
  audience: string;
  ttlSec: number;
  dir: string;
  out: string | undefined;
}

function fail(message: string): never {
  console.error(`[identity:token] ${message}\n${USAGE}`);
  process.exit(2);
}

function parseArgs(argv: string[]): Args {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (!['--subject', '--audience', '--ttl-sec', '--dir', '--out'].includes(flag))
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
  // npm runs this in the repository's root: a relative path is the caller's, from INIT_CWD.
  const here = process.env.INIT_CWD ?? process.cwd();
  const given = values.get('--dir');
  const dir = given ? resolve(here, given) : join(__dirname, '..', '..', '.dlock', 'identity');
  const out = values.get('--out');
  return {
    subject,
    audience,
    ttlSec,
    dir,
    out: out === undefined ? undefined : resolve(here, out),
  };
}

/**
 * Whether npm already wrote its banner to the stdout this token goes to: under `npm run`
 * without `-s`, to a pipe or a file (on a terminal the banner is only something to read past).
 */
function npmBannerOnStdout(env: NodeJS.ProcessEnv): boolean {
  return (
    env.npm_lifecycle_event === 'identity:token' &&
    env.npm_config_loglevel !== 'silent' &&
    !process.stdout.isTTY
  );
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  // Never a fresh issuer: a token from keys no service trusts would only confuse.
  if (!existsSync(join(args.dir, 'issuer-keys.json')))
    fail(`no development issuer in ${args.dir}: run \`npm start\` once first`);
  const issuer = await DevIssuer.open(args.dir);
  const token = await issuer.mint(args.subject, args.audience, { ttlSec: args.ttlSec });
  const until = new Date(Date.now() + args.ttlSec * 1000).toISOString().slice(0, 19);
  const what = `a token for ${args.subject}, audience ${args.audience}, until ${until}Z`;
  const use =
    args.audience === OPERATOR_AUDIENCE
      ? "paste it into the console's sign-in form"
      : `send it as Authorization: Bearer to ${args.audience}`;
  if (args.out) {
    // Owner-only, as everything under .dlock/ is: it is a credential.
    writeFileSync(args.out, `${token}\n`, { mode: 0o600 });
    chmodSync(args.out, 0o600); // a file that was there keeps its mode through writeFileSync
    console.error(`[identity:token] ${what}, written to ${args.out}: ${use}`);
    return;
  }
  process.stdout.write(`${token}\n`);
  console.error(`[identity:token] ${what}: ${use}`);
  if (npmBannerOnStdout(process.env))
    console.error(
      "[identity:token] npm printed its banner on stdout before the token: to capture the token alone use --out FILE (or npm's -s)",
    );
}

main().catch((err: unknown) => {
  console.error('[identity:token] failed:', err);
  process.exit(1);
});
