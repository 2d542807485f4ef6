#!/usr/bin/env node
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { EnvError, requiredDatabaseUrl } from '@dlock/config';
import { PAYDB_MIGRATIONS } from '../../../../migrations/paydb';
import { paydbDataSource } from '../persistence/paydb-data-source.factory';
import { Fixtures } from './fixture-data.repository';

const USAGE = `usage (PAYDB_URL must be set):
  fixtures seed [--accounts 20] [--payouts 200] [--currency EUR] [--opening-balance 1000000]
                [--min-amount 100] [--max-amount 50000] [--seed 42] [--migrate]
      creates accounts (opening balance posted through the ledger) and PENDING payouts;
      does nothing if customer accounts already exist
  fixtures create-account [--id ID] [--currency EUR] [--opening-balance 1000000] [--migrate]
  fixtures create-payout --account ID --amount N [--beneficiary REF]
  fixtures feed [--rate 2] [--min-amount 100] [--max-amount 50000] [--seed 7]
      keeps creating PENDING payouts on existing customer accounts, --rate per second,
      until SIGINT/SIGTERM
Output: one JSON line on stdout.`;

class UsageError extends Error {}

function int(name: string, raw: string | undefined, fallback: number | undefined, min: number) {
  if (raw === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)) || Number(raw) < min) {
    throw new UsageError(`--${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return Number(raw);
}

function currency(raw: string | undefined): string {
  const value = raw ?? 'EUR';
  if (!/^[A-Z]{3}$/.test(value)) throw new UsageError(`--currency must be ISO-4217 (e.g. EUR)`);
  return value;
}

const COMMANDS = ['seed', 'create-account', 'create-payout', 'feed'] as const;
type Command = (typeof COMMANDS)[number];

const OPTIONS = {
  accounts: { type: 'string' },
  payouts: { type: 'string' },
  currency: { type: 'string' },
  'opening-balance': { type: 'string' },
  'min-amount': { type: 'string' },
  'max-amount': { type: 'string' },
  seed: { type: 'string' },
  id: { type: 'string' },
  account: { type: 'string' },
  amount: { type: 'string' },
  beneficiary: { type: 'string' },
  rate: { type: 'string' },
  migrate: { type: 'boolean' },
} as const;

/** The options given; parseArgs refuses an unknown one. */
function parseOptions(args: string[]) {
  return parseArgs({ args, strict: true, options: OPTIONS }).values;
}
type Values = ReturnType<typeof parseOptions>;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const values = parseOptions(rest);
  if (!COMMANDS.includes(command as Command)) {
    throw new UsageError(command ? `unknown command "${command}"` : 'a command is required');
  }
  const PAYDB_URL = requiredDatabaseUrl('PAYDB_URL');
  const dataSource = paydbDataSource({
    url: PAYDB_URL,
    poolMax: 2,
    statementTimeoutMs: 60_000,
    migrations: PAYDB_MIGRATIONS,
  });
  await dataSource.initialize();
  try {
    if (values.migrate) await dataSource.runMigrations({ transaction: 'each' });
    const out = await run(command as Command, values, new Fixtures(dataSource));
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    await dataSource.destroy();
  }
}

/** One command on an open paydb; its answer is the JSON line printed. */
async function run(
  command: Command,
  values: Values,
  fixtures: Fixtures,
): Promise<Record<string, unknown>> {
  switch (command) {
    case 'seed':
      return seed(values, fixtures);
    case 'create-account':
      return {
        command,
        accountId: await fixtures.createAccount({
          accountId: values.id,
          currency: currency(values.currency),
          openingBalanceMinor: int('opening-balance', values['opening-balance'], 1_000_000, 0),
        }),
      };
    case 'feed':
      return feed(values, fixtures);
    case 'create-payout':
      if (!values.account) throw new UsageError('--account is required');
      return {
        command,
        payoutId: await fixtures.createPayout({
          accountId: values.account,
          amountMinor: int('amount', values.amount, undefined, 1),
          beneficiaryRef: values.beneficiary,
        }),
      };
  }
}

async function seed(values: Values, fixtures: Fixtures): Promise<Record<string, unknown>> {
  const min = int('min-amount', values['min-amount'], 100, 1);
  const result = await fixtures.seed({
    accounts: int('accounts', values.accounts, 20, 0),
    payouts: int('payouts', values.payouts, 200, 0),
    currency: currency(values.currency),
    openingBalanceMinor: int('opening-balance', values['opening-balance'], 1_000_000, 0),
    minAmountMinor: min,
    maxAmountMinor: int('max-amount', values['max-amount'], 50_000, min),
    seed: int('seed', values.seed, 42, 0),
  });
  return {
    command: 'seed',
    skipped: result.skipped,
    accounts: result.accountIds.length,
    payouts: result.payoutIds.length,
  };
}

/** Creates payouts at --rate until SIGINT or SIGTERM. */
async function feed(values: Values, fixtures: Fixtures): Promise<Record<string, unknown>> {
  const min = int('min-amount', values['min-amount'], 100, 1);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  const created = await fixtures.feed(
    {
      ratePerSec: int('rate', values.rate, 2, 1),
      minAmountMinor: min,
      maxAmountMinor: int('max-amount', values['max-amount'], 50_000, min),
      seed: int('seed', values.seed, 7, 0),
    },
    stop.signal,
  );
  return { command: 'feed', created };
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (
    err instanceof UsageError ||
    err instanceof EnvError ||
    (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
  ) {
    console.error(`fixtures: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  console.error('fixtures: failed:', err);
  process.exit(1);
});
