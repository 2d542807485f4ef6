import { fileTokenProvider } from '@dlock/identity';
import { Module } from '@nestjs/common';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../config';
import { ReconcilerMetricsModule } from '../metrics.module';
import { PeersModule } from '../peers/peers.module';
import { DatabasesModule } from '../persistence/databases.module';
import { RevocationsClient } from './clients/revocations.client';
import { RevocationFencingService } from './service/revocation-fencing.service';
import { TokenSourceCheck } from './service/token-source.service';

/** Revocations carried to the guards, and the token source checked against them (docs/reconciler.md). */
@Module({
  imports: [DatabasesModule, PeersModule, ReconcilerMetricsModule],
  providers: [
    {
      provide: RevocationsClient,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) =>
        new RevocationsClient(
          config.LOCK_SERVER_URL,
          fileTokenProvider(config.AUTH_TOKEN_DIR, 'lock-server'),
        ),
    },
    RevocationFencingService,
    TokenSourceCheck,
  ],
  exports: [RevocationFencingService, TokenSourceCheck],
})
export class FencingModule {}
