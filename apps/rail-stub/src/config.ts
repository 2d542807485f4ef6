import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  EnvBool,
  EnvInt,
  EnvNumber,
  EnvOneOf,
  type EnvSource,
  EnvString,
  ServiceEnv,
  validateEnv,
} from '@dlock/config';
import { FAILURE_MODES, type FailureMode } from './rail/domain/fault-plan.rules';

/** Every knob of the rail stub (docs/rail.md). Read once at boot. */
export class RailStubEnv extends ServiceEnv(8085) {
  @EnvInt({ default: 0, min: 0, max: 600_000 }) readonly RAIL_STUB_LATENCY_MS!: number;
  @EnvNumber({ default: 0, min: 0, max: 1 }) readonly RAIL_STUB_FAILURE_RATE!: number;
  @EnvOneOf(FAILURE_MODES, { default: 'mixed' }) readonly RAIL_STUB_FAILURE_MODE!: FailureMode;
  @EnvNumber({ default: 0.5, min: 0, max: 1 }) readonly RAIL_STUB_FAILURE_ACCEPT_RATE!: number;
  @EnvInt({ default: 10_000, min: 0, max: 600_000 }) readonly RAIL_STUB_HOLD_MS!: number;
  @EnvNumber({ default: 0, min: 0, max: 1 }) readonly RAIL_STUB_DECLINE_RATE!: number;
  @EnvNumber({ default: 0, min: 0, max: 1 }) readonly RAIL_STUB_DUPLICATE_ACK_RATE!: number;
  /** The slow calls (docs/rail.md): a share of the answers takes RAIL_STUB_SLOW_LATENCY_MS instead. */
  @EnvNumber({ default: 0, min: 0, max: 1 }) readonly RAIL_STUB_SLOW_RATE!: number;
  @EnvInt({ default: 5_000, min: 0, max: 600_000 }) readonly RAIL_STUB_SLOW_LATENCY_MS!: number;
  @EnvInt({ default: 1, min: 0, max: 2 ** 32 - 1 }) readonly RAIL_STUB_SEED!: number;
  /** Under the temp dir by default: the image's working dir is root-owned and read-only (docs/rail.md). */
  @EnvString({ default: path.join(tmpdir(), 'dlock-rail-stub', 'journal.jsonl') })
  readonly RAIL_STUB_JOURNAL_PATH!: string;
  @EnvBool({ default: true }) readonly RAIL_STUB_JOURNAL_FSYNC!: boolean;
  @EnvInt({ default: 5_000, min: 0, max: 86_400_000 })
  readonly RAIL_STUB_SETTLEMENT_WINDOW_MS!: number;
}

export type RailStubConfig = RailStubEnv;
export const RAIL_STUB_CONFIG = Symbol('RAIL_STUB_CONFIG');

export function readRailStubConfig(source: EnvSource): RailStubConfig {
  return validateEnv(RailStubEnv, source);
}
