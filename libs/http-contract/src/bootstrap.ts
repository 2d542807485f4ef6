import {
  HttpException,
  Logger,
  type DynamicModule,
  type INestApplication,
  type Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { text } from 'express';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { Logger as PinoLogger } from 'nestjs-pino';
import { OPERATOR_AUDIENCE, policyFile, TokenVerifier } from '@dlock/identity';
import { authenticateRequests, type AuthGate, type AuthOptions } from './authentication';
import { RefusalLimiter } from './refusal-limits';
import { InFlightAdmission } from './admission';
import { inboundTrace, runInRequestTrace } from '@dlock/tracing';
import { OperationGuard } from './operation';
import { requestDeadline } from './deadline';
import { refuseNonJsonBody, refuseRepeatedHeaders } from './headers';
import { ContractExceptionFilter, sendError } from './exception.filter';
import { int64Replacer, parseRequestBody } from './json';
import { renderError } from './envelope';
import { serveOpenApiDocument, servePublicKeys } from './openapi';
import { requestTraceId, traceIdFrom, type TracedRequest } from './trace';
import { contractValidationPipe } from './validation';

export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Who may call: verifiers of service tokens and of the people a delegating
 * caller acts for, and the authorisation policy; or, for an app standing in for a
 * system outside this one, nobody is asked (docs/security.md);
 * or (only the console) people signed in to the app itself, whose gate the app
 * installs in `beforeBody` (docs/console.md, "Signing in").
 */
export type RequestAuth =
  | AuthGate
  | 'open: a system outside this one, asking nobody'
  | 'people: sessions the app gates itself';

/** What an app adds to the wire conventions; every field may be left out. */
export interface ContractHooks {
  /**
   * Middleware that runs where a service authenticates: after the request's
   * trace and deadline are read, before its body is (an app gating its own
   * sessions refuses there, at no cost).
   */
  beforeBody?: (app: NestExpressApplication) => void;
  /** Largest request body; BODY_LIMIT_BYTES unless the app's bodies are smaller. */
  bodyLimitBytes?: number;
}

/** Applies the wire conventions of docs/contract.md to an express-backed Nest app. */
export function applyHttpContract(
  app: NestExpressApplication,
  auth: RequestAuth,
  hooks: ContractHooks = {},
): void {
  const logger = new Logger('http');
  app.disable('x-powered-by');
  // Every response is a fresh API answer; express would hash each body for an ETag nobody revalidates.
  app.set('etag', false);
  app.set('json replacer', int64Replacer);
  app.use((req: TracedRequest, res: Response, next: NextFunction) => {
    // Export off: this hop's trace, parsed once and kept on the request (docs/tracing.md).
    req.hopTrace = inboundTrace(req.headers);
    res.setHeader('trace-id', requestTraceId(req));
    // The caller's budget starts counting on arrival; a malformed one is refused here, as is
    // a header that must come once and came twice (before the auth gate reads the first).
    try {
      refuseRepeatedHeaders(req.rawHeaders);
      requestDeadline(req);
      next();
    } catch (err) {
      next(err);
    }
  });
  if (typeof auth !== 'string') {
    authenticateRequests(app, auth);
    app.useGlobalGuards(new OperationGuard(auth.policy));
  }
  hooks.beforeBody?.(app);
  const limit = hooks.bodyLimitBytes ?? BODY_LIMIT_BYTES;
  // inflate: false: a Content-Encoding other than identity is 415, never decoded (README, Wire conventions).
  app.use((req: Request, _res: Response, next: NextFunction) => {
    try {
      refuseNonJsonBody(req);
      next();
    } catch (err) {
      next(err);
    }
  });
  app.use(text({ type: () => true, limit, inflate: false }));
  app.use((req: Request, _res: Response, next: NextFunction) => {
    const raw: unknown = req.body;
    if (typeof raw !== 'string' || raw.trim() === '') {
      req.body = undefined;
      return next();
    }
    try {
      req.body = parseRequestBody(raw);
      next();
    } catch (err) {
      next(err);
    }
  });
  // The handler runs in the request's trace: its log lines and outbound calls carry it.
  app.use((req: TracedRequest, _res: Response, next: NextFunction) =>
    runInRequestTrace(req.hopTrace, next),
  );
  // Errors raised before Nest routing (body too large, malformed JSON) still leave as the envelope.
  app.use((err: unknown, req: TracedRequest, res: Response, _next: NextFunction) => {
    sendError(res, err, requestTraceId(req), logger, req.method);
  });
  app.useGlobalFilters(new ContractExceptionFilter());
  app.useGlobalPipes(contractValidationPipe());
  answerUnparsableRequests(app.getHttpServer());
}

/**
 * Bytes node's HTTP parser refuses (bad framing, bad header bytes, headers
 * too large) never reach express; node would answer a bare 400. They get the
 * envelope too, then the connection is closed (its framing is lost).
 */
function answerUnparsableRequests(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    // As node does: a response already started on this socket (`_httpMessage`) is let
    // finish and nothing is added; one not yet started is replaced by this answer.
    const current = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (current?.headersSent) {
      socket.end();
      return;
    }
    const [status, reason, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'request headers too large']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'request not received in time']
          : [400, 'Bad Request', 'malformed HTTP request'];
    const body = JSON.stringify(
      renderError(new HttpException(message, status), traceIdFrom(undefined)).body,
    );
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}

/** What an app adds to the `listening` log line once its port is known. */
export interface ListeningNote {
  fields?: Record<string, unknown>;
  /** Replaces `<name> listening on http://127.0.0.1:<port>`. */
  message?: string;
}

export interface ServeOptions extends ContractHooks {
  port: number;
  host?: string;
  /** Also the audience a token sent to this service must name. */
  name: string;
  auth:
    | AuthOptions
    | 'open: a system outside this one, asking nobody'
    | 'people: sessions the app gates itself';
  /** The public keys this service signs with, served at /.well-known/jwks.json. */
  publicKeys?: () => object;
  /** Every route counts against the caller's budget (OpenApiOptions.rateLimited). */
  rateLimited?: boolean;
  /** Files served as they are (a page and its scripts), `index.html` at `/`. */
  staticDir?: string;
  /** Runs once the port is known (PORT=0 learns it at listen), before `listening` is logged. */
  afterListen?: (app: INestApplication, port: number) => ListeningNote | void;
}

function requestAuth(options: ServeOptions): RequestAuth {
  if (options.auth === 'people: sessions the app gates itself') {
    // Without its gate such an app would answer anyone.
    if (options.beforeBody === undefined) throw new Error(`${options.name}: no session gate`);
    return options.auth;
  }
  if (typeof options.auth === 'string') return options.auth;
  const { policyFile: file, operator, refusals, admission, ...verifier } = options.auth;
  return {
    ...(refusals === undefined ? {} : { refusals: new RefusalLimiter(refusals) }),
    ...(admission === undefined ? {} : { admission: new InFlightAdmission(admission) }),
    verifier: new TokenVerifier({ ...verifier, audience: options.name }),
    operatorVerifier: new TokenVerifier(
      operator ?? { jwks: verifier.jwks, issuer: verifier.issuer, audience: OPERATOR_AUDIENCE },
    ),
    policy: policyFile(file),
  };
}

/**
 * Creates, configures and starts an app; returns it listening. The options may
 * be read from the app itself (its validated config), once its modules are built.
 */
export async function serveHttpApp(
  module: Type<unknown> | DynamicModule | Promise<DynamicModule>,
  serve: ServeOptions | ((app: INestApplication) => ServeOptions),
): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(module, {
    bodyParser: false,
    bufferLogs: true,
    // A bad environment rejects here (EnvError) instead of aborting the process.
    abortOnError: false,
  });
  const options = typeof serve === 'function' ? serve(app) : serve;
  app.useLogger(app.get(PinoLogger));
  // The policy is read and checked before the app serves anything: a bad one stops the service.
  applyHttpContract(app, requestAuth(options), options);
  if (options.publicKeys) servePublicKeys(app, options.publicKeys);
  if (options.staticDir) app.useStaticAssets(options.staticDir, { index: 'index.html' });
  // A page for people serves no service API, so it has no OpenAPI document (docs/console.md).
  if (options.auth !== 'people: sessions the app gates itself') {
    serveOpenApiDocument(app, {
      name: options.name,
      authenticated: typeof options.auth !== 'string',
      publishesKeys: options.publicKeys !== undefined,
      rateLimited: options.rateLimited,
    });
  }
  app.enableShutdownHooks();
  await app.listen(options.port, options.host ?? '127.0.0.1');
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const note = options.afterListen?.(app, port) ?? {};
  app
    .get(PinoLogger)
    .log(
      { event: 'listening', port, ...note.fields },
      note.message ?? `${options.name} listening on http://127.0.0.1:${port}`,
    );
  return app;
}
