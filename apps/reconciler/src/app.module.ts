import { fileTokenProvider } from '@dlock/identity';
import { Inject, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { LockClientModule } from '@dlock/lock-nest';
import { HealthModule, ObservabilityModule, registerSafetyEvents } from '@dlock/observability';
import { registerAuditChains } from '@dlock/persistence';
import { PAYOUT_AUDIT_CHAIN_LIST } from '@dlock/payout-contract/audit-chains';
import { RECONCILER_CONFIG, readReconcilerConfig, type ReconcilerConfig } from './config';
import { ReadOnlyDb, type DbName } from './persistence/read-only-db';
import { ReconcilerReadiness } from './persistence/readiness';
import { LOCKDB, PAYDB, PROXYDB } from './persistence/tokens';
import { AuditChainService } from './detective/service/audit-chain.service';
import { DetectiveService } from './detective/service/detective.service';
import { SubmissionGrants } from './detective/service/submission-grants';
import { RailSweepService } from './detective/service/rail-sweep.service';
import { RevocationFencingService } from './fencing/service/revocation-fencing.service';
import { TokenSourceCheck } from './fencing/service/token-source.service';
import { ReportController } from './http/report.controller';
import { ReconcilerLoops } from './loops';
import { ReconcilerMetrics } from './metrics';
import {
  PAYOUT_SAFETY_EVENTS,
  registerPayoutVocabulary,
  PaymentResourceClient,
  RailLookupClient,
  RailProxyClient,
} from '@dlock/payout-contract';
import { RevocationsClient } from './fencing/clients/revocations.client';
import { PAYMENT_RESOURCE, PayoutResolver } from './resolution/service/payout-resolver';
import { RAIL_LOOKUP, ResolutionService } from './resolution/service/resolution.service';

// The payout operations (every dlock app reads the one policy file that grants them) and error
// codes: known before any policy is read or route declared (docs/extending.md).
registerPayoutVocabulary();
// Their safety events, counted from 0 by SafetyEvents (docs/operations.md, "Safety events").
registerSafetyEvents(PAYOUT_SAFETY_EVENTS);
// The payout services' audit chains, verified beside the lock service's (docs/audit.md).
registerAuditChains(PAYOUT_AUDIT_CHAIN_LIST);

function readOnlyDb(config: ReconcilerConfig, name: DbName, url: string): ReadOnlyDb {
  return new ReadOnlyDb({
    name,
    url,
    poolMax: config.RECONCILER_DB_POOL_MAX,
    connectTimeoutMs: config.RECONCILER_DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.RECONCILER_DB_STATEMENT_TIMEOUT_MS,
    tries: config.RECONCILER_DB_TRIES,
  });
}

/** The three read-only pools (lockdb optional), closed at shutdown. */
@Module({
  providers: [
    {
      provide: PAYDB,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) => readOnlyDb(config, 'paydb', config.PAYDB_URL),
    },
    {
      provide: PROXYDB,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) => readOnlyDb(config, 'proxydb', config.PROXYDB_URL),
    },
    {
      provide: LOCKDB,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) =>
        config.LOCKDB_URL ? readOnlyDb(config, 'lockdb', config.LOCKDB_URL) : null,
    },
  ],
  exports: [PAYDB, PROXYDB, LOCKDB],
})
export class DatabasesModule implements OnApplicationShutdown {
  constructor(
    @Inject(PAYDB) private readonly paydb: ReadOnlyDb,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
    @Inject(LOCKDB) private readonly lockdb: ReadOnlyDb | null,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.paydb.close(), this.proxydb.close(), this.lockdb?.close()]);
  }
}

/** The reconciler as one importable module, around its validated config. */
@Module({})
export class ReconcilerModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: configModule, config } = await AppConfigModule.forRoot(
      RECONCILER_CONFIG,
      readReconcilerConfig,
      options,
    );
    return {
      module: ReconcilerModule,
      imports: [
        configModule,
        DatabasesModule,
        ObservabilityModule.forRoot({ app: 'reconciler', logLevel: config.LOG_LEVEL }),
        HealthModule.register(ReconcilerReadiness, [DatabasesModule]),
        // One session, opened when first needed; failing to open it fails the pass closed.
        LockClientModule.forRoot({
          baseUrl: config.LOCK_SERVER_URL,
          ownerId: config.OWNER_ID,
          token: fileTokenProvider(config.AUTH_TOKEN_DIR, 'lock-server'),
          safetyMargin: config.LOCK_CLIENT_SAFETY_MARGIN,
          sessionTtlMs: config.LOCK_SESSION_TTL_MS,
          lockTtlMs: config.LOCK_DEFAULT_TTL_MS,
        }),
      ],
      controllers: [ReportController],
      providers: [
        {
          provide: PAYMENT_RESOURCE,
          useValue: new PaymentResourceClient(
            config.PAYMENT_RESOURCE_URL,
            config.OWNER_ID,
            fileTokenProvider(config.AUTH_TOKEN_DIR, 'payment-resource'),
          ),
        },
        { provide: RAIL_LOOKUP, useValue: new RailLookupClient(config.RAIL_STUB_URL) },
        {
          provide: RevocationsClient,
          useValue: new RevocationsClient(
            config.LOCK_SERVER_URL,
            fileTokenProvider(config.AUTH_TOKEN_DIR, 'lock-server'),
          ),
        },
        // Floor raises only: built without a submit budget, it cannot submit.
        {
          provide: RailProxyClient,
          useValue: new RailProxyClient(
            config.RAIL_PROXY_URL,
            config.OWNER_ID,
            undefined,
            fileTokenProvider(config.AUTH_TOKEN_DIR, 'rail-proxy'),
          ),
        },
        RevocationFencingService,
        TokenSourceCheck,
        ReconcilerMetrics,
        PayoutResolver,
        ResolutionService,
        SubmissionGrants,
        DetectiveService,
        AuditChainService,
        RailSweepService,
        ReconcilerLoops,
      ],
    };
  }
}
