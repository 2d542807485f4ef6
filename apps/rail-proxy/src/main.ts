import './tracing';
import 'reflect-metadata';
import { Logger, Module } from '@nestjs/common';
import { EnvError } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { RailProxyModule } from './app.module';
import { readRailProxyConfig, type RailProxyConfig } from './config';

function rootModule(config: RailProxyConfig) {
  @Module({ imports: [RailProxyModule.forRoot(config)] })
  class RailProxyRoot {}
  return RailProxyRoot;
}

async function main(): Promise<void> {
  let config: RailProxyConfig;
  try {
    config = readRailProxyConfig();
  } catch (err) {
    if (err instanceof EnvError) {
      console.error(`[rail-proxy] ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  await serveHttpApp(rootModule(config), {
    port: config.PORT,
    name: 'rail-proxy',
    auth: { jwks: config.AUTH_JWKS, issuer: config.AUTH_ISSUER, policyFile: config.AUTH_POLICY },
  });
  if (!config.RAIL_PROXY_FENCING_ENABLED) {
    new Logger('rail-proxy').warn(
      { event: 'fencing_disabled', killSwitch: 'RAIL_PROXY_FENCING_ENABLED' },
      'rail-proxy fencing is OFF (harness negative control): stale tokens and duplicates are forwarded',
    );
  }
}

main().catch((err: unknown) => {
  console.error('[rail-proxy] failed to start:', err);
  process.exit(1);
});
