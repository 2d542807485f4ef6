import { EnvError } from '@dlock/config';
import { readTracingConfig } from './config';

describe('readTracingConfig', () => {
  it('exports nothing by default, and names the service after the app', () => {
    expect(readTracingConfig('executor', {})).toEqual({
      serviceName: 'executor',
      exporter: 'none',
      otlpTracesUrl: undefined,
    });
  });

  it('turns OTLP export on when an endpoint is set, the base endpoint gaining /v1/traces', () => {
    expect(
      readTracingConfig('lock-server', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318/' }),
    ).toEqual({
      serviceName: 'lock-server',
      exporter: 'otlp',
      otlpTracesUrl: 'http://jaeger:4318/v1/traces',
    });
  });

  it('uses the traces endpoint as given, and OTEL_SERVICE_NAME over the app name', () => {
    expect(
      readTracingConfig('lock-server', {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/custom',
        OTEL_SERVICE_NAME: 'lock-server-eu',
      }),
    ).toEqual({
      serviceName: 'lock-server-eu',
      exporter: 'otlp',
      otlpTracesUrl: 'http://collector:4318/custom',
    });
  });

  it('lets OTEL_TRACES_EXPORTER win over an endpoint: none keeps export off, memory keeps spans here', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' };
    expect(readTracingConfig('x', { ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).exporter).toBe(
      'none',
    );
    expect(readTracingConfig('x', { OTEL_TRACES_EXPORTER: 'memory' })).toEqual({
      serviceName: 'x',
      exporter: 'memory',
      otlpTracesUrl: undefined,
    });
    expect(readTracingConfig('x', { OTEL_TRACES_EXPORTER: 'otlp' }).otlpTracesUrl).toBe(
      'http://localhost:4318/v1/traces',
    );
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, 'OTEL_TRACES_EXPORTER: must be one of none, otlp, memory'],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'jaeger:4318' },
      'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL, got "jaeger:4318"',
    ],
  ])('refuses %p', (source, problem) => {
    expect(() => readTracingConfig('x', source)).toThrow(EnvError);
    expect(() => readTracingConfig('x', source)).toThrow(problem);
  });
});
