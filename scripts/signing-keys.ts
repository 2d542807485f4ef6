/**
 * `npm run keys`: the signing keys of `npm start` and of a deployment (docs/security.md, "Signed
 * grants" and "Rotating the signing keys"): the lock-server's grant keys, payment-resource's
 * instruction keys, the rail-proxy's receipt keys, and the development issuer's own key.
 *
 *   npm run keys list [DIR|RING ...]      every ring under DIR (default .dlock/identity): its keys,
 *                                         which one signs, when each was added, the retired
 *   npm run keys new RING                 a ring with one key (kept if there is one)
 *   npm run keys add RING                 rotation step 1: a new key, published, not signing
 *   npm run keys promote RING KID         step 2: KID signs from now on
 *   npm run keys retire RING KID          step 3: KID is no longer published
 *   npm run keys rotate-issuer [DIR]      the development issuer's key (DIR default .dlock/identity):
 *                                         a new one signs, the previous stays published
 *
 * Each ring step also writes the public JWKS beside the ring (`<name>.jwks.json`), keeping its
 * mode (0600 under .dlock/). Relative paths are the caller's (npm runs this in the repository).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import {
  addSigningKey,
  describeSigningKeys,
  DevIssuer,
  ensureSigningKeys,
  KeyRingError,
  promoteSigningKey,
  retireSigningKey,
  SigningKeyRing,
  type IssuerKeys,
} from '@dlock/identity';

const USAGE = [
  'usage: keys list [DIR|RING ...]',
  '       keys new|add RING',
  '       keys promote|retire RING KID',
  '       keys rotate-issuer [DIR]',
].join('\n');
const HERE = process.env.INIT_CWD ?? process.cwd();
/** dist/scripts/ → the repository's .dlock/identity, where npm start keeps its keys. */
const DEFAULT_DIR = join(__dirname, '..', '..', '.dlock', 'identity');
const ISSUER_FILE = 'issuer-keys.json';
/** Which variable of which service reads each of npm start's rings (docs/security.md). */
const READ_BY: Record<string, string> = {
  'grant-keys.json': 'GRANT_SIGNING_KEYS, lock-server',
  'instruction-keys.json': 'INSTRUCTION_SIGNING_KEYS, payment-resource',
  'receipt-keys.json': 'RECEIPT_SIGNING_KEYS, rail-proxy',
  [ISSUER_FILE]: 'the development issuer, every service token of npm start',
};

function shown(path: string): string {
  const rel = relative(HERE, path);
  return rel === '' ? '.' : rel.startsWith('..') ? path : rel;
}

function keyLines(view: IssuerKeys): string[] {
  const lines = view.keys.map(
    (k) =>
      `  ${k.kid}  ${k.signs ? 'signs    ' : 'published'}  created ${k.createdAt ?? 'unknown'}`,
  );
  for (const r of view.retired)
    lines.push(
      `  ${r.kid}  retired    created ${r.createdAt ?? 'unknown'}, retired ${r.retiredAt}`,
    );
  return lines;
}

/** The rings in `dir`: the issuer's key file and every ring under signing/ (not the JWKS). */
function ringsIn(dir: string): string[] {
  const rings = existsSync(join(dir, ISSUER_FILE)) ? [join(dir, ISSUER_FILE)] : [];
  const signing = join(dir, 'signing');
  if (existsSync(signing))
    for (const name of readdirSync(signing).sort())
      if (name.endsWith('.json') && !name.endsWith('.jwks.json')) rings.push(join(signing, name));
  return rings;
}

async function describe(path: string): Promise<string> {
  const issuer = basename(path) === ISSUER_FILE;
  const view = issuer
    ? (await DevIssuer.open(resolve(path, '..'))).describe()
    : describeSigningKeys(path);
  const readBy = READ_BY[basename(path)];
  return [`${shown(path)}${readBy ? ` (${readBy})` : ''}`, ...keyLines(view)].join('\n');
}

async function list(targets: string[]): Promise<string> {
  const paths = (targets.length ? targets : [DEFAULT_DIR]).map((t) => resolve(HERE, t));
  const rings: string[] = [];
  for (const p of paths) {
    if (!existsSync(p)) throw new KeyRingError(`${shown(p)}: no such file or directory`);
    rings.push(...(statSync(p).isDirectory() ? ringsIn(p) : [p]));
  }
  if (rings.length === 0) throw new KeyRingError(`no keys under ${paths.map(shown).join(', ')}`);
  const blocks: string[] = [];
  for (const ring of rings) blocks.push(await describe(ring));
  return blocks.join('\n');
}

async function run(args: string[]): Promise<string> {
  const [command, target, kid] = args;
  if (command === 'list') return list(args.slice(1));
  if (command === 'rotate-issuer') {
    const dir = resolve(HERE, target ?? DEFAULT_DIR);
    if (!existsSync(join(dir, ISSUER_FILE)))
      throw new KeyRingError(
        `no development issuer in ${shown(dir)}: run \`npm start\` once first`,
      );
    const signs = await (await DevIssuer.open(dir)).rotate();
    return `issuer ${shown(dir)}: ${signs} signs from now on; the previous key stays published`;
  }
  if (!target) throw new KeyRingError(USAGE);
  const ring = resolve(HERE, target);
  switch (command) {
    case 'new':
      return `ring ${shown(ensureSigningKeys(ring).keys)}, signing with ${SigningKeyRing.open(ring).kid}`;
    case 'add':
      return `added ${addSigningKey(ring)}: published, not signing yet`;
    case 'promote':
      if (!kid) throw new KeyRingError(USAGE);
      promoteSigningKey(ring, kid);
      return `${kid} signs from now on`;
    case 'retire':
      if (!kid) throw new KeyRingError(USAGE);
      retireSigningKey(ring, kid);
      return `${kid} retired`;
    default:
      throw new KeyRingError(USAGE);
  }
}

run(process.argv.slice(2)).then(
  (out) => console.log(out.startsWith('  ') || out.includes('\n') ? out : `[keys] ${out}`),
  (err: unknown) => {
    const known = err instanceof KeyRingError || (err as NodeJS.ErrnoException).code === 'ENOENT';
    console.error(`[keys] ${known ? (err as Error).message : String(err)}`);
    process.exit(2);
  },
);
