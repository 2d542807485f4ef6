import './tracing';
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { EnvError } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { ExecutorModule } from './app.module';
import { readExecutorConfig, type ExecutorConfig } from './config';

function rootModule(config: ExecutorConfig) {
  @Module({ imports: [ExecutorModule.forRoot(config)] })
  class ExecutorRoot {}
  return ExecutorRoot;
}

async function main(): Promise<void> {
  let config: ExecutorConfig;
  try {
    config = readExecutorConfig();
  } catch (err) {
    if (err instanceof EnvError) {
      console.error(`[executor] ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  // Metrics and health only; the work is the polling loop (PayoutPollingLoop).
  await serveHttpApp(rootModule(config), {
    port: config.PORT,
    name: 'executor',
    auth: { jwks: config.AUTH_JWKS, issuer: config.AUTH_ISSUER, policyFile: config.AUTH_POLICY },
  });
}

main().catch((err: unknown) => {
  console.error('[executor] failed to start:', err);
  process.exit(1);
});
