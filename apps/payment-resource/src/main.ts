import './tracing';
import 'reflect-metadata';
import { exitOnStartFailure } from '@dlock/config';
import { serveHttpApp } from '@dlock/http-contract';
import { serviceAuthOptions } from '@dlock/identity';
import { PaymentResourceModule } from './app.module';
import { PAYMENT_CONFIG, type PaymentConfig } from './config';
import { InstructionSigner } from './payouts/service/instruction-signer.service';

async function main(): Promise<void> {
  // A bad environment rejects here, naming every offending variable.
  const module = await PaymentResourceModule.forRoot();
  await serveHttpApp(module, (app) => {
    const config = app.get<PaymentConfig>(PAYMENT_CONFIG);
    return {
      port: config.PORT,
      host: config.BIND_HOST,
      name: 'payment-resource',
      auth: serviceAuthOptions(config),
      // Every route counts against the caller's budget (PAYMENT_RATE_LIMIT).
      rateLimited: true,
      // The rail-proxy checks payout instructions against these (docs/rail.md, "Instructions").
      publicKeys: () => app.get(InstructionSigner).ring.publicJwks,
    };
  });
}

main().catch(exitOnStartFailure('payment-resource'));
