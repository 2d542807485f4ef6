import './tracing';
import 'reflect-metadata';
import { exitOnStartFailure } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { serviceAuthOptions } from '@dlock/identity';
import { LockServerModule } from './app.module';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from './config';
import { GrantProofs } from './locks/service/grant-proofs.service';
import { lockServerAdmission } from './http/admission.config';

async function main(): Promise<void> {
  // A bad environment rejects here, naming every offending variable.
  const module = await LockServerModule.forRoot();
  await serveHttpApp(module, (app) => {
    const config = app.get<LockServerConfig>(LOCK_SERVER_CONFIG);
    return {
      port: config.PORT,
      host: config.BIND_HOST,
      name: 'lock-server',
      auth: {
        ...serviceAuthOptions(config),
        refusals: {
          perSourceMax: config.LOCK_UNAUTHENTICATED_RATE_LIMIT,
          logLinesMax: config.LOCK_REFUSAL_LOG_LINES_MAX,
          windowMs: config.LOCK_UNAUTHENTICATED_RATE_WINDOW_MS,
        },
        admission: lockServerAdmission(config),
      },
      publicKeys: () => app.get(GrantProofs).ring.publicJwks,
    };
  });
}

main().catch(exitOnStartFailure('lock-server'));
