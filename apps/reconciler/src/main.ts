import './tracing';
import 'reflect-metadata';
import { EnvError } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { createAppModule } from './app.module';
import { readReconcilerConfig } from './config';

async function main(): Promise<void> {
  const config = readReconcilerConfig();
  await serveHttpApp(createAppModule(config), {
    port: config.PORT,
    name: 'reconciler',
    auth: { jwks: config.AUTH_JWKS, issuer: config.AUTH_ISSUER, policyFile: config.AUTH_POLICY },
  });
}

main().catch((err: unknown) => {
  if (err instanceof EnvError) console.error(`reconciler: ${err.message}`);
  else console.error('reconciler failed to start:', err);
  process.exit(1);
});
