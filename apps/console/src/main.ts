import './tracing';
import 'reflect-metadata';
import { join } from 'node:path';
import { Logger as PinoLogger } from 'nestjs-pino';
import { exitOnStartFailure } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { ConsoleModule } from './app.module';
import { ConsolePeers } from './console-peers.client';
import { CONSOLE_CONFIG, type ConsoleConfig } from './config';
import { warnWithoutJwks } from './sessions/service/person-verifier.service';
import { gateRequests } from './sessions/http/request.guard';

/** The page's files: plain HTML, CSS and JS, no build step (copied next to dist by scripts/build.js). */
const STATIC_DIR = join(__dirname, '..', 'static');

async function main(): Promise<void> {
  // A bad environment rejects here, naming every offending variable.
  const module = await ConsoleModule.forRoot();
  const app = await serveHttpApp(module, (created) => {
    const config = created.get<ConsoleConfig>(CONSOLE_CONFIG);
    const gate = gateRequests(config);
    return {
      port: config.PORT,
      host: config.CONSOLE_HOST,
      name: 'console',
      // People with a session, not services with bearer tokens (docs/console.md, "Signing in").
      auth: 'people: sessions the app gates itself',
      // Where a service authenticates, before the body is read or any route runs: a foreign
      // Host or Origin, no session, or no anti-CSRF token is refused at no cost.
      beforeBody: (app) => gate.install(app),
      bodyLimitBytes: 16 * 1024,
      staticDir: STATIC_DIR,
      afterListen: (app, port) => ({
        // PORT=0 learns its port at listen; the allowed Host names are completed then.
        fields: { allowedHosts: [...gate.listeningOn(port)] },
        message:
          `console listening on http://${config.CONSOLE_HOST}:${port}, ` +
          `reading as ${app.get(ConsolePeers).identity}`,
      }),
    };
  });
  warnWithoutJwks(app.get<ConsoleConfig>(CONSOLE_CONFIG), app.get(PinoLogger));
}

main().catch(exitOnStartFailure('console'));
