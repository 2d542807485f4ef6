import {
  Global,
  Inject,
  Module,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { RouteInfo } from '@nestjs/common/interfaces';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { register } from 'prom-client';
import { LoggerModule } from 'nestjs-pino';
import type { IncomingMessage } from 'node:http';
import { requestTraceId, type TracedRequest } from '@dlock/http-contract';
import type { LockClientEvents } from '@dlock/lock-client';
import { LOCK_CLIENT_EVENTS, SafetyEventFeed, SafetyEvents } from '@dlock/lock-nest';
import { activeTraceFields, stopTracing } from '@dlock/tracing';
import { debugRequestLog } from './debug-request-log';
import { SAFETY_EVENT_SERVICE, SafetyEventsController } from './safety-events.controller';
import { spanControllers } from './spans.controller';

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
  /**
   * Serve GET /v1/safety-events (default true). Off only where no safety
   * event is ever emitted and no caller is authenticated (the rail stub).
   */
  safetyEventFeed?: boolean;
}

const OBSERVABILITY_OPTIONS = Symbol('OBSERVABILITY_OPTIONS');

/** pino JSON logs carrying `traceId` and `spanId`, Prometheus `/metrics`, and the safety events. */
@Global()
@Module({})
export class ObservabilityModule implements NestModule, OnApplicationShutdown {
  constructor(@Inject(OBSERVABILITY_OPTIONS) private readonly options: ObservabilityOptions) {}

  configure(consumer: MiddlewareConsumer): void {
    const routes = this.options.untracedRoutes ?? [];
    const level = this.options.logLevel ?? 'info';
    if (routes.length > 0 && (level === 'debug' || level === 'trace')) {
      consumer.apply(debugRequestLog).forRoutes(...routes);
    }
  }

  /** Spans still queued for the collector go out before the process exits. */
  async onApplicationShutdown(): Promise<void> {
    await stopTracing();
  }

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
            // Every line, request or not (the executor's attempts, safety events), carries the
            // active trace and span ids (docs/tracing.md); fields a call gives explicitly win.
            mixin: activeTraceFields,
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
      controllers: [
        ...spanControllers(),
        ...(options.safetyEventFeed === false ? [] : [SafetyEventsController]),
      ],
      providers: [
        { provide: OBSERVABILITY_OPTIONS, useValue: options },
        { provide: SAFETY_EVENT_SERVICE, useValue: options.app },
        // pino takes the fields as the line's own: `event` is a JSON field operators search for.
        {
          provide: SafetyEvents,
          useFactory: () => new SafetyEvents(register, new SafetyEventFeed(), 'fields'),
        },
        // LockClientModule reports session loss here: event=session_lost, lock_session_lost_total.
        { provide: LOCK_CLIENT_EVENTS, useFactory: sessionLossReporter, inject: [SafetyEvents] },
      ],
      exports: [SafetyEvents, LOCK_CLIENT_EVENTS],
    };
  }
}

/** The lock client's loss hook on SafetyEvents (docs/lock-client.md, "Options"). */
export function sessionLossReporter(safety: SafetyEvents): LockClientEvents {
  return { onSafetyEvent: (_event, fields) => safety.sessionLost(fields) };
}
