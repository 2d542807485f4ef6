import './tracing';
import 'reflect-metadata';
import { EnvError } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { lockServerAppModule } from './app.module';
import { loadConfig, type LockServerConfig } from './config';

async function main(): Promise<void> {
  let config: LockServerConfig;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof EnvError) {
      console.error(`[lock-server] ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  await serveHttpApp(lockServerAppModule(config), {
    port: config.PORT,
    name: 'lock-server',
    auth: { jwks: config.AUTH_JWKS, issuer: config.AUTH_ISSUER, policyFile: config.AUTH_POLICY },
  });
}

main().catch((err: unknown) => {
  console.error('[lock-server] failed to start:', err);
  process.exit(1);
});
