import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { RouteInfo } from '@nestjs/common/interfaces';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { register } from 'prom-client';
import { LoggerModule } from 'nestjs-pino';
import type { IncomingMessage } from 'node:http';
import { requestTraceId, type TracedRequest } from '@dlock/http-contract';
import { SafetyEvents } from './safety-events';

export interface ObservabilityOptions {
  app: string;
  logLevel?: string;
  /**
   * Hot routes served without the per-request logger context (its async
   * context costs more than the request's own work on the lock-server's
   * acquire/release path). Their errors still carry `traceId`: the envelope
   * and the error log take it from the request explicitly.
   */
  untracedRoutes?: RouteInfo[];
}

/** pino JSON logs carrying `traceId`, Prometheus `/metrics`, and the safety events. */
@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(options: ObservabilityOptions): DynamicModule {
    return {
      module: ObservabilityModule,
      imports: [
        LoggerModule.forRoot({
          ...(options.untracedRoutes?.length ? { exclude: options.untracedRoutes } : {}),
          pinoHttp: {
            level: options.logLevel ?? 'info',
            base: { app: options.app },
            genReqId: (req: TracedRequest) => requestTraceId(req),
            customProps: (req: TracedRequest) => ({ traceId: requestTraceId(req) }),
            autoLogging: {
              ignore: (req: IncomingMessage) => /^\/(metrics|health)/.test(req.url ?? ''),
            },
            customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
            serializers: {
              req: (req: { method: string; url: string }) => ({ method: req.method, url: req.url }),
              res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
            },
            timestamp: () => `,"time":"${new Date().toISOString()}"`,
          },
        }),
        PrometheusModule.register({
          path: '/metrics',
          // Several apps may share one process in tests: default metrics register once.
          defaultMetrics: { enabled: !register.getSingleMetric('process_cpu_user_seconds_total') },
        }),
      ],
      providers: [{ provide: SafetyEvents, useFactory: () => new SafetyEvents() }],
      exports: [SafetyEvents],
    };
  }
}
