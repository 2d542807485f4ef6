import './tracing';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { exitOnStartFailure } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { serviceAuthOptions } from '@dlock/identity';
import { RailProxyModule } from './app.module';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from './config';
import { ReceiptSigner } from './submission/service/receipt-signer.service';

async function main(): Promise<void> {
  // A bad environment rejects here, naming every offending variable.
  const module = await RailProxyModule.forRoot();
  const app = await serveHttpApp(module, (created) => {
    const config = created.get<RailProxyConfig>(RAIL_PROXY_CONFIG);
    return {
      port: config.PORT,
      host: config.BIND_HOST,
      name: 'rail-proxy',
      auth: serviceAuthOptions(config),
      // payment-resource checks rail receipts against these (docs/rail.md, "Receipts").
      publicKeys: () => created.get(ReceiptSigner).ring.publicJwks,
      // Every route counts against the caller's budget (RAIL_PROXY_RATE_LIMIT).
      rateLimited: true,
    };
  });
  if (!app.get<RailProxyConfig>(RAIL_PROXY_CONFIG).RAIL_PROXY_FENCING_ENABLED) {
    new Logger('rail-proxy').warn(
      { event: 'fencing_disabled', killSwitch: 'RAIL_PROXY_FENCING_ENABLED' },
      'rail-proxy fencing is OFF (harness negative control): stale tokens and duplicates are forwarded',
    );
  }
}

main().catch(exitOnStartFailure('rail-proxy'));
