import './tracing';
import 'reflect-metadata';
import { exitOnStartFailure } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { serviceAuthOptions } from '@dlock/identity';
import { ExecutorModule } from './app.module';
import { EXECUTOR_CONFIG, type ExecutorConfig } from './config';

async function main(): Promise<void> {
  // A bad environment rejects here, naming every offending variable.
  const module = await ExecutorModule.forRoot();
  // Metrics and health only; the work is the polling loop (PayoutPollingLoop).
  await serveHttpApp(module, (app) => {
    const config = app.get<ExecutorConfig>(EXECUTOR_CONFIG);
    return {
      port: config.PORT,
      host: config.BIND_HOST,
      name: 'executor',
      auth: serviceAuthOptions(config),
    };
  });
}

main().catch(exitOnStartFailure('executor'));
