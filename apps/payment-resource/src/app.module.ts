import { PAYOUT_SAFETY_EVENTS, registerPayoutVocabulary } from '@dlock/payout-contract';
import { Module, RequestMethod, type DynamicModule } from '@nestjs/common';
import type { RouteInfo } from '@nestjs/common/interfaces';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { IdentityThrottlingModule } from '@dlock/http-contract';
import { HealthModule, ObservabilityModule, registerSafetyEvents } from '@dlock/observability';
import { PAYMENT_CONFIG, readPaymentConfig } from './config';
import { FenceFloorModule } from './fence-floor/fence-floor.module';
import { LedgerModule } from './ledger/ledger.module';
import { PaydbModule } from './persistence/paydb.module';
import { PaydbReadiness } from './paydb.readiness';
import { AccountsModule } from './accounts/accounts.module';
import { PayoutsModule } from './payouts/payouts.module';

// The payout operations (every dlock app reads the one policy file that grants them) and error
// codes: known before any policy is read or route declared (docs/extending.md).
registerPayoutVocabulary();
// Their safety events, counted from 0 by SafetyEvents (docs/operations.md, "Safety events").
registerSafetyEvents(PAYOUT_SAFETY_EVENTS);

/**
 * The executor's writes on every payout, served without the per-request logger
 * context (see ObservabilityOptions.untracedRoutes): their safety events and
 * errors carry `traceId` explicitly; payout_transition is their audit trail.
 */
const PER_PAYOUT_ROUTES: RouteInfo[] = [
  { path: 'v1/payouts/:payoutId/claim', method: RequestMethod.POST },
  { path: 'v1/payouts/:payoutId/rail-outcome', method: RequestMethod.POST },
  { path: 'v1/payouts/:payoutId/post', method: RequestMethod.POST },
];

/**
 * payment-resource as one importable module: its validated config (global,
 * under PAYMENT_CONFIG and ConfigService), then one module per bounded context.
 */
@Module({})
export class PaymentResourceModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: config, config: values } = await AppConfigModule.forRoot(
      PAYMENT_CONFIG,
      readPaymentConfig,
      options,
    );
    return {
      module: PaymentResourceModule,
      imports: [
        config,
        ObservabilityModule.forRoot({
          app: 'payment-resource',
          logLevel: values.LOG_LEVEL,
          untracedRoutes: PER_PAYOUT_ROUTES,
        }),
        HealthModule.register(PaydbReadiness, [PaydbModule]),
        // Before any proof is checked or event recorded (docs/security.md, "Limits").
        IdentityThrottlingModule.forRoot(values.PAYMENT_RATE_LIMIT, values.PAYMENT_RATE_WINDOW_MS),
        LedgerModule,
        PayoutsModule,
        AccountsModule,
        FenceFloorModule,
      ],
    };
  }
}
