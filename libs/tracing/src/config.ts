import { EnvError, EnvString, EnvUrl, validateEnv, type EnvSource } from '@dlock/config/env';

/** Where finished spans go: nowhere (ids still propagate), an OTLP/HTTP collector, or memory. */
export const TRACE_EXPORTERS = ['none', 'otlp', 'memory'] as const;
export type TraceExporterKind = (typeof TRACE_EXPORTERS)[number];

/** The standard OpenTelemetry variables dlock honours (docs/tracing.md has the table). */
export class TracingEnv {
  @EnvString({ optional: true }) readonly OTEL_TRACES_EXPORTER?: string;
  @EnvUrl({ optional: true }) readonly OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  @EnvUrl({ optional: true }) readonly OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  @EnvString({ optional: true }) readonly OTEL_SERVICE_NAME?: string;
}

export interface TracingConfig {
  readonly serviceName: string;
  readonly exporter: TraceExporterKind;
  /** Full URL spans are POSTed to (only for `otlp`). */
  readonly otlpTracesUrl: string | undefined;
}

/**
 * Export is off unless asked for: by OTEL_TRACES_EXPORTER, or by an OTLP endpoint being set.
 * Read before Nest starts (the instrumentations patch modules as they load), so not through ConfigModule.
 */
export function readTracingConfig(service: string, source: EnvSource = process.env): TracingConfig {
  const raw = validateEnv(TracingEnv, source);
  const endpoint = httpOnly(raw.OTEL_EXPORTER_OTLP_ENDPOINT, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const tracesEndpoint = httpOnly(
    raw.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  );
  const exporter = exporterKind(
    raw.OTEL_TRACES_EXPORTER,
    endpoint !== undefined || tracesEndpoint !== undefined ? 'otlp' : 'none',
  );
  // The OTLP/HTTP defaults: the signal endpoint is used as is, the base one gains /v1/traces.
  const otlpTracesUrl =
    exporter !== 'otlp'
      ? undefined
      : (tracesEndpoint ?? `${endpoint ?? 'http://localhost:4318'}/v1/traces`);
  return { serviceName: raw.OTEL_SERVICE_NAME ?? service, exporter, otlpTracesUrl };
}

/** Its default depends on the endpoints, so it is checked here rather than by a decorator. */
function exporterKind(raw: string | undefined, fallback: TraceExporterKind): TraceExporterKind {
  if (raw === undefined) return fallback;
  const kind = TRACE_EXPORTERS.find((k) => k === raw);
  if (kind !== undefined) return kind;
  throw new EnvError([
    `OTEL_TRACES_EXPORTER: must be one of ${TRACE_EXPORTERS.join(', ')}, got "${raw}"`,
  ]);
}

/** OTLP over HTTP: `collector:4318` parses as a URL of scheme `collector:`, and would never be reached. */
function httpOnly(url: string | undefined, name: string): string | undefined {
  if (url === undefined || /^https?:$/.test(new URL(url).protocol)) return url;
  throw new EnvError([`${name}: must be an http:// or https:// URL, got "${url}"`]);
}
