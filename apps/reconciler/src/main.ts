import './tracing';
import 'reflect-metadata';
import { exitOnStartFailure } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { serviceAuthOptions } from '@dlock/identity';
import { ReconcilerModule } from './app.module';
import { RECONCILER_CONFIG, type ReconcilerConfig } from './config';

async function main(): Promise<void> {
  // A bad environment rejects here, naming every offending variable.
  const module = await ReconcilerModule.forRoot();
  await serveHttpApp(module, (app) => {
    const config = app.get<ReconcilerConfig>(RECONCILER_CONFIG);
    return {
      port: config.PORT,
      host: config.BIND_HOST,
      name: 'reconciler',
      auth: serviceAuthOptions(config),
    };
  });
}

main().catch(exitOnStartFailure('reconciler'));
