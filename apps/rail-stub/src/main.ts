import './tracing';
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { EnvError } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { RailStubModule } from './app.module';
import { readRailStubConfig, type RailStubConfig } from './config';

function rootModule(config: RailStubConfig) {
  @Module({ imports: [RailStubModule.forRoot(config)] })
  class RailStubRoot {}
  return RailStubRoot;
}

async function main(): Promise<void> {
  let config: RailStubConfig;
  try {
    config = readRailStubConfig();
  } catch (err) {
    if (err instanceof EnvError) {
      console.error(`[rail-stub] ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  await serveHttpApp(rootModule(config), {
    port: config.PORT,
    name: 'rail-stub',
    // The stand-in for a bank outside this system: its callers' authentication is the bank's.
    auth: 'open: external rail simulator',
  });
}

main().catch((err: unknown) => {
  console.error('[rail-stub] failed to start:', err);
  process.exit(1);
});
