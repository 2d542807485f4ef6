import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../../config';
import { AuditChainService } from '../../detective/service/audit-chain.service';
import { DetectiveService } from '../../detective/service/detective.service';
import { RailSweepService } from '../../detective/service/rail-sweep.service';
import { RevocationFencingService } from '../../fencing/service/revocation-fencing.service';
import { TokenSourceCheck } from '../../fencing/service/token-source.service';
import { ResolutionService } from '../../resolution/service/resolution.service';
import { FixedDelayLoop } from './fixed-delay.loop';

/** Starts the schedules after boot; on shutdown stops them, then closes the lock session. */
@Injectable()
export class ReconcilerLoops implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('reconciler');
  private readonly resolution: FixedDelayLoop;
  private readonly checks: FixedDelayLoop;
  private readonly railSweep: FixedDelayLoop;
  private readonly fencing: FixedDelayLoop;
  private readonly audit: FixedDelayLoop;

  constructor(
    @Inject(RECONCILER_CONFIG) config: ReconcilerConfig,
    resolution: ResolutionService,
    detective: DetectiveService,
    railSweep: RailSweepService,
    revocations: RevocationFencingService,
    tokenSource: TokenSourceCheck,
    audit: AuditChainService,
  ) {
    const onError = (name: string, err: unknown) =>
      this.logger.error({ loop: name, err: (err as Error).message }, 'loop iteration failed');
    this.resolution = new FixedDelayLoop(
      'resolution',
      config.RECONCILER_INTERVAL_MS,
      async (signal) => void (await resolution.runPass(signal)),
      onError,
    );
    this.checks = new FixedDelayLoop(
      'checks',
      config.RECONCILER_CHECK_INTERVAL_MS,
      async (signal) => void (await detective.runAll(signal)),
      onError,
    );
    this.railSweep = new FixedDelayLoop(
      'rail-sweep',
      config.RECONCILER_SWEEP_INTERVAL_MS,
      async (signal) => void (await railSweep.runPass(signal)),
      onError,
    );
    this.audit = new FixedDelayLoop(
      'audit',
      config.RECONCILER_AUDIT_INTERVAL_MS,
      async (signal) => void (await audit.runPass(signal)),
      onError,
    );
    // Fencing and the token-source probe are independent: one failing still runs the other.
    this.fencing = new FixedDelayLoop(
      'fencing',
      config.RECONCILER_FENCING_INTERVAL_MS,
      async (signal) => {
        // A pass cut short by stop() is no failure, as FixedDelayLoop itself says (schedule.ts).
        const failed = (name: string) => (err: unknown) => {
          if (!signal.aborted) onError(name, err);
        };
        await revocations.runPass(signal).catch(failed('fencing'));
        await tokenSource.probe(signal).catch(failed('token-probe'));
      },
      onError,
    );
  }

  onApplicationBootstrap(): void {
    this.resolution.start();
    this.checks.start();
    this.railSweep.start();
    this.fencing.start();
    this.audit.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([
      this.resolution.stop(),
      this.checks.stop(),
      this.railSweep.stop(),
      this.fencing.stop(),
      this.audit.stop(),
    ]);
    // The lock session closes after this, in LockSessionKeeper's shutdown hook.
  }
}
