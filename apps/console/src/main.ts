import './tracing';
import 'reflect-metadata';
import { Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Logger as PinoLogger } from 'nestjs-pino';
import { EnvError } from '@dlock/config';
import {
  ContractExceptionFilter,
  contractValidationPipe,
  int64Replacer,
  requestTraceId,
  sendError,
} from '@dlock/http-contract';
import { ConsoleModule } from './app.module';
import { ConsolePeers } from './clients/console-peers';
import { readConsoleConfig, type ConsoleConfig } from './config';
import { PersonVerifier } from './auth/person-verifier';
import { allowedHosts, hostAndOriginGuard, sessionGate } from './auth/request-guard';
import { SessionStore } from './auth/sessions';

/** The page's files: plain HTML, CSS and JS, no build step (copied next to dist by scripts/build.js). */
const STATIC_DIR = join(__dirname, '..', 'static');

function rootModule(config: ConsoleConfig) {
  @Module({ imports: [ConsoleModule.forRoot(config)] })
  class ConsoleRoot {}
  return ConsoleRoot;
}

async function main(): Promise<void> {
  let config: ConsoleConfig;
  try {
    config = readConsoleConfig();
  } catch (err) {
    if (err instanceof EnvError) {
      console.error(`[console] ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  const app = await NestFactory.create<NestExpressApplication>(rootModule(config), {
    bodyParser: false,
    bufferLogs: true,
  });
  app.useLogger(app.get(PinoLogger));
  app.disable('x-powered-by');
  app.set('json replacer', int64Replacer);
  // Before anything else, the body included: a foreign Host or Origin, no session, or no
  // anti-CSRF token is refused before any work (docs/console.md, "Signing in").
  // PORT=0 learns its port at listen; the set is completed then.
  let hosts = allowedHosts(config.allowedHosts, config.CONSOLE_HOST, config.PORT);
  app.use(hostAndOriginGuard(() => hosts));
  app.use(sessionGate(app.get(SessionStore), app.get(PersonVerifier)));
  app.useBodyParser('json', { limit: '16kb' });
  const logger = new Logger('http');
  // A body the parser refuses still leaves as the envelope (libs/http-contract).
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) =>
    sendError(res, err, requestTraceId(req), logger, req.method),
  );
  app.useStaticAssets(STATIC_DIR, { index: 'index.html' });
  app.useGlobalFilters(new ContractExceptionFilter());
  app.useGlobalPipes(contractValidationPipe());
  app.enableShutdownHooks();
  await app.listen(config.PORT, config.CONSOLE_HOST);
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  hosts = allowedHosts(config.allowedHosts, config.CONSOLE_HOST, port);
  const log = app.get(PinoLogger);
  log.log(
    { event: 'listening', port, allowedHosts: [...hosts] },
    `console listening on http://${config.CONSOLE_HOST}:${port}, reading as ${app.get(ConsolePeers).identity}`,
  );
  const jwks = config.AUTH_OPERATOR_JWKS ?? config.AUTH_JWKS;
  if (!/^https?:\/\//.test(jwks) && !existsSync(jwks))
    log.warn({ jwks }, `no JWKS at ${jwks} yet: nobody can sign in until it exists`);
}

main().catch((err: unknown) => {
  console.error('[console] failed to start:', err);
  process.exit(1);
});
