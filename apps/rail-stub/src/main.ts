import './tracing';
import 'reflect-metadata';
import { exitOnStartFailure } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { RailStubModule } from './app.module';
import { RAIL_STUB_CONFIG, type RailStubConfig } from './config';

async function main(): Promise<void> {
  // A bad environment rejects here, naming every offending variable.
  const module = await RailStubModule.forRoot();
  await serveHttpApp(module, (app) => ({
    port: app.get<RailStubConfig>(RAIL_STUB_CONFIG).PORT,
    host: app.get<RailStubConfig>(RAIL_STUB_CONFIG).BIND_HOST,
    name: 'rail-stub',
    // The stand-in for a bank outside this system: its callers' authentication is the bank's.
    auth: 'open: a system outside this one, asking nobody',
  }));
}

main().catch(exitOnStartFailure('rail-stub'));
