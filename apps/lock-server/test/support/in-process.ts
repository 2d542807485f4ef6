import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger as PinoLogger } from 'nestjs-pino';
import { register } from 'prom-client';
import { applyHttpContract } from '@dlock/http-contract';
import {
  lockServerProofs,
  registerAudience,
  registerProofSource,
  testAuthEnv,
  testRequestAuth,
} from '@dlock/testing';
import { LockServerModule } from '../../src/app.module';

export interface RunningLockServer {
  /** Base URL, e.g. http://127.0.0.1:40123 */
  url: string;
  /** The Nest application, for a test that must reach a provider (a gate or a count on one call). */
  app: NestExpressApplication;
  stop(): Promise<void>;
}

/** The real lock-server module in this process, on a free port, with the given environment. */
export async function startInProcess(env: Record<string, string>): Promise<RunningLockServer> {
  const module = await LockServerModule.forRoot({
    env: { LOG_LEVEL: 'silent', ...(await testAuthEnv()), ...env },
  });
  // Several apps in one jest worker share prom-client's default registry: start each one clean.
  register.clear();
  const app = await NestFactory.create<NestExpressApplication>(module, {
    bodyParser: false,
    logger: false,
  });
  app.useLogger(app.get(PinoLogger));
  applyHttpContract(app, await testRequestAuth('lock-server', env.AUTH_POLICY));
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  registerAudience(url, 'lock-server');
  registerProofSource(url, lockServerProofs);
  return { url, app, stop: () => app.close() };
}
