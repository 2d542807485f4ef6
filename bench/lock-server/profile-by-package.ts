/**
 * Self time of a V8 `.cpuprofile` (node --cpu-prof) summed by package and by
 * function, to find where a lock-server spends its CPU (bench/reports/auth-cost.md).
 *
 *   node dist/bench/lock-server/profile-by-package.js <file.cpuprofile> [top=25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** `node_modules/@scope/name` or `node_modules/name`, else the repo area or the runtime. */
function packageOf(url: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url === '') return '(native/gc/idle)';
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const own = /\/dist\/((?:apps|libs)\/[^/]+)/.exec(url);
  return own ? own[1] : url;
}

function main(): void {
  const [file, topArg] = process.argv.slice(2);
  if (!file) throw new Error('usage: profile-by-package <file.cpuprofile> [top]');
  const top = Number(topArg ?? 25);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) =>
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)),
  );
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const pkg = packageOf(url);
    total += us;
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
    const fn = `${pkg} ${functionName || '(anonymous)'}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  }
  const print = (title: string, m: Map<string, number>) => {
    console.log(`\n${title} (self ms, % of ${(total / 1000).toFixed(0)} ms)`);
    for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
      console.log(
        `${(us / 1000).toFixed(0).padStart(8)} ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`,
      );
  };
  print('by package', byPackage);
  print('by function', byFunction);
}

main();
