import { performance } from 'node:perf_hooks';
import { closeGuards, GUARD_MODES, type GuardMode } from './guards.sim';
import {
  BROKEN_VARIANTS,
  replayCommand,
  runSeed,
  type BrokenVariant,
  type Fault,
} from './sim.runner';
import type { NetworkFaults } from './network.sim';
import { shrinkSchedule } from './schedule-shrink.checker';

/**
 * `npm run sim -- [--seeds N | --seconds S] [--from SEED] [--seed SEED] [--guards model|pglite]
 * [--broken VARIANT] [--faults JSON]`: runs seeds one after another, prints seeds/s and simulated
 * payouts/s; the first failing seed is shrunk and printed with its replay line.
 */
interface Args {
  seeds: number;
  seconds: number;
  from: number;
  seed?: number;
  /** Count failing seeds and go on (a speed measurement), instead of stopping at the first. */
  keepGoing: boolean;
  /** model: the guards' rules in memory (fast); pglite: their real services and SQL. */
  guards: GuardMode;
  broken?: BrokenVariant;
  faults?: Fault[];
  network?: NetworkFaults;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = {
    seeds: Infinity,
    seconds: Infinity,
    from: 1,
    keepGoing: false,
    guards: 'model',
  };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--keep-going') {
      args.keepGoing = true;
      i--;
      continue;
    }
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    switch (flag) {
      case '--seeds':
        args.seeds = positive(flag, value);
        break;
      case '--seconds':
        args.seconds = positive(flag, value);
        break;
      case '--from':
        args.from = positive(flag, value);
        break;
      case '--seed':
        args.seed = positive(flag, value);
        break;
      case '--guards':
        if (!(GUARD_MODES as readonly string[]).includes(value))
          throw new Error(`--guards must be one of ${GUARD_MODES.join(', ')}`);
        args.guards = value as GuardMode;
        break;
      case '--broken':
        if (!(BROKEN_VARIANTS as readonly string[]).includes(value))
          throw new Error(`--broken must be one of ${BROKEN_VARIANTS.join(', ')}`);
        args.broken = value as BrokenVariant;
        break;
      case '--faults':
        args.faults = JSON.parse(value) as Fault[];
        break;
      case '--network':
        args.network = JSON.parse(value) as NetworkFaults;
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  if (args.seeds === Infinity && args.seconds === Infinity && args.seed === undefined)
    args.seeds = 100;
  return args;
}

function positive(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer`);
  return n;
}

async function replay(args: Args & { seed: number }): Promise<number> {
  const r = await runSeed({
    seed: args.seed,
    guards: args.guards,
    broken: args.broken,
    faults: args.faults,
    network: args.network,
  });
  console.log(`seed ${r.seed}: ${r.failed ? 'FAILED' : 'ok'}  history ${r.historyHash}`);
  console.log(`  faults ${JSON.stringify(r.faults)}`);
  for (const [check, messages] of Object.entries(r.violations))
    for (const m of messages.slice(0, 5)) console.log(`  ${check}: ${m}`);
  return r.failed ? 1 : 0;
}

async function search(args: Args): Promise<number> {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let seeds = 0;
  let posted = 0;
  const failing: number[] = [];
  for (let seed = args.from; seeds < args.seeds; seed++) {
    if ((performance.now() - t0) / 1000 >= args.seconds) break;
    const r = await runSeed({ seed, guards: args.guards, broken: args.broken });
    seeds++;
    posted += r.payoutsPosted;
    if (r.failed && args.keepGoing) failing.push(seed);
    else if (r.failed) {
      console.log(`seed ${seed} FAILED: ${Object.keys(r.violations).join(', ')}`);
      console.log(`  replay: ${replayCommand({ seed, guards: args.guards }, args.broken)}`);
      const shrunk = await shrinkSchedule(seed, r, args.broken, args.guards);
      console.log(
        `  shrunk in ${shrunk.runs} runs to ${shrunk.faults.length} of ${r.faults.length} faults:`,
      );
      console.log(
        `  replay: ${replayCommand({ seed, guards: args.guards, ...shrunk }, args.broken)}`,
      );
      return 1;
    }
  }
  const wallS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuS = (cpu.user + cpu.system) / 1e6;
  console.log(
    `${seeds} seeds (${failing.length} failing${failing.length ? `: ${failing.slice(0, 10).join(' ')}` : ''}) in ${wallS.toFixed(1)} s (${cpuS.toFixed(1)} CPU-s): ` +
      `${(seeds / wallS).toFixed(2)} seeds/s, ${(posted / wallS).toFixed(1)} simulated payouts/s, ` +
      `${(posted / cpuS).toFixed(1)} payouts per CPU-second`,
  );
  return failing.length > 0 ? 1 : 0;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  try {
    process.exitCode =
      args.seed !== undefined ? await replay({ ...args, seed: args.seed }) : await search(args);
  } finally {
    // On every path, a failure too: an open PGlite would keep the process alive.
    await closeGuards();
  }
}

void main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 2;
});
