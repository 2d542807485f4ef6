import { Injectable, Logger } from '@nestjs/common';
import { counter } from '@dlock/metrics';
import { register, type Counter, type Registry } from 'prom-client';
import { logLine } from '../nest-logger';
import { SafetyEventFeed } from './safety-event-feed';

/** The lock service's safety events (docs/operations.md): each is a structured log event and a metric. */
export type BuiltInSafetyEvent =
  'fenced_out' | 'session_lost' | 'lock_revoked' | 'token_regression' | 'proof_rejected';

/**
 * A safety event an app adds (docs/extending.md, "Your own error codes and safety events"): a log event of this
 * name with `message`, counted on `metric`. The event and metric names are what alerts and
 * operators search for (docs/operations.md): registered once, never renamed.
 */
export interface SafetyEventSpec {
  readonly event: string;
  readonly message: string;
  readonly metric: string;
  readonly help: string;
  /** Labels whose values are the event's fields of the same names; never a key, id or token. */
  readonly labels?: readonly string[];
  /** Fixed label values: several events counted on one metric, told apart by these. */
  readonly fixedLabels?: Readonly<Record<string, string>>;
  /** For a refusal a caller can repeat at will: the fields that make two of them one feed record. */
  readonly coalesceBy?: readonly string[];
}

const BUILT_IN_EVENTS: ReadonlySet<string> = new Set<BuiltInSafetyEvent>([
  'fenced_out',
  'session_lost',
  'lock_revoked',
  'token_regression',
  'proof_rejected',
]);
const EVENT_NAME = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;
const registeredEvents = new Map<string, SafetyEventSpec>();

/**
 * Adds an app's safety events; called when its module loads, before SafetyEvents is built (its
 * counters start at 0 then, so an alert sees the first event). The same spec again is harmless;
 * another meaning for a known event, or another help or labels for a known metric, throws.
 */
export function registerSafetyEvents(specs: readonly SafetyEventSpec[]): void {
  for (const spec of specs) {
    if (!EVENT_NAME.test(spec.event) || BUILT_IN_EVENTS.has(spec.event)) {
      throw new Error(
        `safety event ${JSON.stringify(spec.event)} is not snake_case or is built in`,
      );
    }
    const known = registeredEvents.get(spec.event);
    if (known !== undefined && JSON.stringify(known) !== JSON.stringify(spec)) {
      throw new Error(`safety event ${spec.event} is already registered with another meaning`);
    }
    const sameMetric = [...registeredEvents.values()].find((s) => s.metric === spec.metric);
    if (
      sameMetric !== undefined &&
      JSON.stringify(labelNamesOf(sameMetric)) !== JSON.stringify(labelNamesOf(spec))
    ) {
      throw new Error(`metric ${spec.metric} is already registered with other labels`);
    }
    if (sameMetric !== undefined && sameMetric.help !== spec.help) {
      throw new Error(`metric ${spec.metric} is already registered with another help text`);
    }
    registeredEvents.set(spec.event, spec);
  }
}

function labelNamesOf(spec: SafetyEventSpec): string[] {
  return [...(spec.labels ?? []), ...Object.keys(spec.fixedLabels ?? {})];
}

export type FencedResource = string;

/**
 * How a safety event reaches the log (docs/extending.md, "Your own error codes and safety
 * events"). `fields`: the fields are the line's own, for a logger that takes an object first
 * (nestjs-pino: dlock's services, ObservabilityModule). `line`: one `message event=<name>
 * name=value …` line, for Nest's own console logger, which prints an object as a multi-line
 * block.
 */
export type SafetyEventLogStyle = 'fields' | 'line';

function counterIn(
  registry: Registry,
  name: string,
  help: string,
  labelNames: string[] = [],
): Counter {
  return counter({ name, help, labelNames, registers: [registry] });
}

/**
 * One place that emits every safety signal. Labels never carry a key, resource
 * id or token (docs/operations.md): those go to the log line only.
 */
@Injectable()
export class SafetyEvents {
  private readonly logger = new Logger('safety');
  readonly fencedOutTotal: Counter;
  readonly sessionLostTotal: Counter;
  readonly revocationsTotal: Counter;
  readonly tokenRegressionTotal: Counter;
  readonly proofRejectedTotal: Counter;
  /** The registered events known when this was built, with their counters. */
  private readonly registered = new Map<string, { spec: SafetyEventSpec; total: Counter }>();

  /**
   * @param feed the recent events GET /v1/safety-events serves: every event
   *   emitted here, and only here, is appended to it.
   * @param logStyle what the app's logger makes one structured line of.
   */
  constructor(
    registry: Registry = register,
    readonly feed: SafetyEventFeed = new SafetyEventFeed(),
    private readonly logStyle: SafetyEventLogStyle = 'line',
  ) {
    this.fencedOutTotal = counterIn(
      registry,
      'lock_fenced_out_total',
      'Writes rejected by a fence guard',
      ['resource'],
    );
    this.sessionLostTotal = counterIn(
      registry,
      'lock_session_lost_total',
      'Lock sessions a client lost',
    );
    this.revocationsTotal = counterIn(
      registry,
      'lock_revocations_total',
      'Operator force-revocations',
    );
    this.tokenRegressionTotal = counterIn(
      registry,
      'lock_token_regression_total',
      'Observed tokens below a value already seen at a guard',
      ['guard'],
    );
    this.proofRejectedTotal = counterIn(
      registry,
      'proof_rejected_total',
      'Fenced requests refused because their grant proof or signed instruction did not prove their claim',
      ['guard', 'proof', 'reason'],
    );
    for (const spec of registeredEvents.values()) {
      const total = counterIn(registry, spec.metric, spec.help, labelNamesOf(spec));
      // A series with only fixed labels is known now: it starts at 0 (see below).
      if (spec.labels === undefined || spec.labels.length === 0)
        total.inc({ ...spec.fixedLabels }, 0);
      this.registered.set(spec.event, { spec, total });
    }
  }

  /**
   * Emits a registered event: counts it and logs it with `fields`. An event nobody registered
   * before this was built throws: its counter would have appeared at 1, unseen by its alert.
   */
  record(event: string, fields: Record<string, unknown>): void {
    const known = this.registered.get(event);
    if (known === undefined) {
      throw new Error(
        `safety event ${event} was never registered: the app registers its events (registerSafetyEvents) when its module loads`,
      );
    }
    const { spec, total } = known;
    const labels = { ...spec.fixedLabels };
    for (const name of spec.labels ?? []) labels[name] = String(fields[name]);
    total.inc(labels);
    this.emit(
      event,
      spec.message,
      fields,
      spec.coalesceBy?.map((name) => fields[name]),
    );
  }

  /** This process can emit `event` with these field labels: that series starts at 0. */
  canRecord(event: string, labels: Record<string, string>): void {
    const known = this.registered.get(event);
    if (known === undefined) throw new Error(`safety event ${event} was never registered`);
    known.total.inc({ ...known.spec.fixedLabels, ...labels }, 0);
  }

  // ---- series at 0 from the start ---------------------------------------------
  // A labelled counter appears at its first event, and a series that appears at 1 has no
  // increase(): the alert on it (docs/operations.md, "Alerts") would miss that event. So
  // each guard names, when it is built, the series it can emit, and they start at 0.

  /** This process guards `resource` (lock_fenced_out_total{resource}). */
  guardsResource(resource: FencedResource): void {
    this.fencedOutTotal.inc({ resource }, 0);
  }

  /** This process can see a token regression as `guard` (lock_token_regression_total{guard}). */
  watchesRegression(guard: string): void {
    this.tokenRegressionTotal.inc({ guard }, 0);
  }

  /** This process checks `proof`s as `guard`, refusing them for any of `reasons`. */
  checksProofs(guard: string, proof: string, reasons: readonly string[]): void {
    for (const reason of reasons) this.proofRejectedTotal.inc({ guard, proof, reason }, 0);
  }

  fencedOut(fields: {
    resource: FencedResource;
    resourceId: string;
    presentedToken: bigint;
    highestToken: bigint | null;
    ownerId: string;
    /** Given explicitly where the route runs without the request logger context. */
    traceId?: string;
  }): void {
    this.fencedOutTotal.inc({ resource: fields.resource });
    const presented = fields.presentedToken.toString();
    this.emit(
      'fenced_out',
      'stale fencing token rejected',
      {
        ...fields,
        presentedToken: presented,
        highestToken: fields.highestToken?.toString() ?? null,
      },
      // The same stale holder retrying the same resource counts on one record.
      [fields.resource, fields.resourceId, fields.ownerId, presented],
    );
  }

  sessionLost(fields: Record<string, unknown>): void {
    this.sessionLostTotal.inc();
    this.emit('session_lost', 'lock session lost', fields);
  }

  lockRevoked(fields: Record<string, unknown>): void {
    this.revocationsTotal.inc();
    this.emit('lock_revoked', 'lock force-revoked by an operator', fields);
  }

  tokenRegression(fields: { guard: string } & Record<string, unknown>): void {
    this.tokenRegressionTotal.inc({ guard: fields.guard });
    this.emit('token_regression', 'token regression observed', fields);
  }

  /**
   * A fence point refused a request whose signed grant or instruction
   * is missing, forged or about something else (docs/security.md): someone
   * claimed what they do not hold. Nothing was written.
   */
  proofRejected(
    fields: { guard: string; proof: string; reason: string } & Record<string, unknown>,
  ): void {
    this.proofRejectedTotal.inc({
      guard: fields.guard,
      proof: fields.proof,
      reason: fields.reason,
    });
    // Whatever resource each names: one caller's garbage proofs are one record (docs/operations.md).
    this.emit('proof_rejected', 'request refused: its proof does not hold', fields, [
      fields.guard,
      fields.proof,
      fields.reason,
      fields.ownerId,
    ]);
  }

  /**
   * `coalesceBy`: for a refusal a caller can repeat at will, the fields that
   * make two of them the same refusal; the feed then counts repeats on one
   * record. The log and the counters still see every one.
   */
  private emit(
    event: string,
    message: string,
    fields: Record<string, unknown>,
    coalesceBy?: unknown[],
  ): void {
    const safe = Object.fromEntries(
      Object.entries(fields).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]),
    );
    // The event's name wins over a field of the same name: it is what operators search for.
    if (this.logStyle === 'fields') this.logger.warn({ ...safe, event }, message);
    else this.logger.warn(logLine(`${message} event=${event}`, safe));
    const key =
      coalesceBy === undefined
        ? undefined
        : JSON.stringify(coalesceBy.map((v) => (typeof v === 'bigint' ? v.toString() : v)));
    this.feed.append(event, safe, key);
  }
}
