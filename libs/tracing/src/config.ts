import { EnvError, env, readEnv } from '@dlock/config';

/** Where finished spans go: nowhere (ids still propagate), an OTLP/HTTP collector, or memory. */
export const TRACE_EXPORTERS = ['none', 'otlp', 'memory'] as const;
export type TraceExporterKind = (typeof TRACE_EXPORTERS)[number];

/** The standard OpenTelemetry variables dlock honours (docs/tracing.md has the table). */
const schema = {
  OTEL_TRACES_EXPORTER: env.optionalString(),
  OTEL_EXPORTER_OTLP_ENDPOINT: env.optionalUrl(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: env.optionalUrl(),
  OTEL_SERVICE_NAME: env.optionalString(),
};

export interface TracingConfig {
  readonly serviceName: string;
  readonly exporter: TraceExporterKind;
  /** Full URL spans are POSTed to (only for `otlp`). */
  readonly otlpTracesUrl: string | undefined;
}

/** Export is off unless asked for: by OTEL_TRACES_EXPORTER, or by an OTLP endpoint being set. */
export function readTracingConfig(
  service: string,
  source: Record<string, string | undefined> = process.env,
): TracingConfig {
  const raw = readEnv(schema, source);
  const endpoint = httpOnly(raw.OTEL_EXPORTER_OTLP_ENDPOINT, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const tracesEndpoint = httpOnly(
    raw.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  );
  const exporter = env
    .oneOf(TRACE_EXPORTERS, {
      default: endpoint !== undefined || tracesEndpoint !== undefined ? 'otlp' : 'none',
    })
    .parse(raw.OTEL_TRACES_EXPORTER, 'OTEL_TRACES_EXPORTER');
  // The OTLP/HTTP defaults: the signal endpoint is used as is, the base one gains /v1/traces.
  const otlpTracesUrl =
    exporter !== 'otlp'
      ? undefined
      : (tracesEndpoint ?? `${endpoint ?? 'http://localhost:4318'}/v1/traces`);
  return { serviceName: raw.OTEL_SERVICE_NAME ?? service, exporter, otlpTracesUrl };
}

/** OTLP over HTTP: `collector:4318` parses as a URL of scheme `collector:`, and would never be reached. */
function httpOnly(url: string | undefined, name: string): string | undefined {
  if (url === undefined || /^https?:$/.test(new URL(url).protocol)) return url;
  throw new EnvError([`${name}: must be an http:// or https:// URL, got "${url}"`]);
}
