import { tmpdir } from 'node:os';
import path from 'node:path';
import { env, readEnv, type EnvOf } from '@dlock/config';
import { FAILURE_MODES } from './fault-plan';

/** Every knob of the rail stub (docs/rail.md). Read once at boot. */
export const RAIL_STUB_ENV = {
  PORT: env.int({ default: 8085, min: 0, max: 65535 }),
  LOG_LEVEL: env.oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
  }),
  RAIL_STUB_LATENCY_MS: env.int({ default: 0, min: 0, max: 600_000 }),
  RAIL_STUB_FAILURE_RATE: env.number({ default: 0, min: 0, max: 1 }),
  RAIL_STUB_FAILURE_MODE: env.oneOf(FAILURE_MODES, { default: 'mixed' }),
  RAIL_STUB_FAILURE_ACCEPT_RATE: env.number({ default: 0.5, min: 0, max: 1 }),
  RAIL_STUB_HOLD_MS: env.int({ default: 10_000, min: 0, max: 600_000 }),
  RAIL_STUB_DECLINE_RATE: env.number({ default: 0, min: 0, max: 1 }),
  RAIL_STUB_DUPLICATE_ACK_RATE: env.number({ default: 0, min: 0, max: 1 }),
  RAIL_STUB_SEED: env.int({ default: 1, min: 0, max: 2 ** 32 - 1 }),
  // Under the temp dir by default: the image's working dir is root-owned and read-only (docs/rail.md).
  RAIL_STUB_JOURNAL_PATH: env.string({
    default: path.join(tmpdir(), 'dlock-rail-stub', 'journal.jsonl'),
  }),
  RAIL_STUB_JOURNAL_FSYNC: env.bool({ default: true }),
  RAIL_STUB_SETTLEMENT_WINDOW_MS: env.int({ default: 5_000, min: 0, max: 86_400_000 }),
};

export type RailStubConfig = EnvOf<typeof RAIL_STUB_ENV>;
export const RAIL_STUB_CONFIG = Symbol('RAIL_STUB_CONFIG');

export function readRailStubConfig(source?: Record<string, string | undefined>): RailStubConfig {
  return readEnv(RAIL_STUB_ENV, source);
}
