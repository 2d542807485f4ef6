import { Test, type TestingModule } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import type { ProofVerifier } from '@dlock/identity';
import { checkGrantClaims, grantProofClaims } from '@dlock/lock-api';
import { SafetyEvents } from '@dlock/observability';
import { payoutLockKey, RAIL_RECEIPT_TYPE, receiptClaims } from '@dlock/payout-contract';
import { RAIL_PROXY_CONFIG, readRailProxyConfig } from '../../../rail-proxy/src/config';
import { RailProxyMetrics } from '../../../rail-proxy/src/rail-proxy.metrics';
import {
  RailClient,
  type ConnectResult,
} from '../../../rail-proxy/src/submission/clients/rail.client';
import type {
  RailAnswer,
  RailTransfer,
} from '../../../rail-proxy/src/submission/domain/rail-outcome.rules';
import type { SubmissionRecord } from '../../../rail-proxy/src/submission/domain/submission.types';
import { ReceiptSigner } from '../../../rail-proxy/src/submission/service/receipt-signer.service';
import { SubmissionProofs } from '../../../rail-proxy/src/submission/service/submission-proofs.service';
import { SubmissionService } from '../../../rail-proxy/src/submission/service/submission.service';
import { SubmissionsModule } from '../../../rail-proxy/src/submission/submission.module';
import { SimDatabase } from './sim-database.sim';
import { simPlatform } from './sim-platform.sim';
import { simGrantVerifier, simProof } from './sim-proofs.sim';

/** The rail stub's side of one presentation: what it answers, after how long (virtual). */
export type SimRail = (transfer: RailTransfer) => Promise<RailAnswer>;

const ENV = {
  PROXYDB_URL: 'postgres://sim@pglite/proxydb',
  AUTH_JWKS: 'sim',
  AUTH_ISSUER: 'sim',
  AUTH_POLICY: 'sim',
  GRANT_JWKS: 'sim',
  INSTRUCTION_JWKS: 'sim',
  RECEIPT_SIGNING_KEYS: 'sim',
  RAIL_READ_TIMEOUT_MS: '8000',
};

/** The receipts' signatures are not simulated (sim-proofs.sim.ts): their claims, as the real signer states them. */
class SimReceiptSigner {
  sign(...args: Parameters<ReceiptSigner['sign']>): string {
    return simProof(RAIL_RECEIPT_TYPE, receiptClaims(...args));
  }

  ofRecord(r: SubmissionRecord): string | null {
    return ReceiptSigner.prototype.ofRecord.call(this, r);
  }
}

/** The receipt R2 shows for a record (the real signer's ofRecord, unsigned). */
export function simReceiptOf(r: SubmissionRecord): string | null {
  return new SimReceiptSigner().ofRecord(r);
}

/**
 * The connection to the rail: the stub answers on virtual time. The rail's
 * deadlines are the network's in the simulation; the proxy's own read
 * timeout is the stub's (it answers `ambiguous` when it would run out).
 */
class SimRailClient {
  constructor(private readonly rail: SimRail) {}

  deadlineFor(): { atMs: number } {
    return { atMs: Number.MAX_SAFE_INTEGER };
  }

  connect(): Promise<ConnectResult> {
    const rail = this.rail;
    const connection = {
      abandon: () => undefined,
      present: (transfer: RailTransfer) => rail(transfer),
    };
    return Promise.resolve({ ok: true, connection } as unknown as ConnectResult);
  }
}

/**
 * The proxy's proof checks: the grant's signature and claims as
 * SubmissionProofs checks them, its verifier on virtual time; the instruction
 * is not signed in the simulation (sim-proofs.sim.ts).
 */
function simSubmissionProofs(grants: ProofVerifier): Pick<SubmissionProofs, 'check'> {
  return {
    async check(req) {
      const grant = grantProofClaims(await grants.verify(req.grantProof));
      const key = payoutLockKey(req.accountId);
      checkGrantClaims(grant, { token: req.presentedToken, owner: req.ownerId, key });
    },
  };
}

/** prom-client's default registry takes each metric once: one per process. */
let metrics: RailProxyMetrics | undefined;

/**
 * rail-proxy in the simulation: its real SubmissionService and
 * SubmissionRepository (the high-water mark, one live submission per payout,
 * the intent committed before the rail is called, the outcome recorded once)
 * on proxydb's real schema in PGlite. Replaced: the grant verifier's clock,
 * the instructions' and receipts' signatures, the HTTP layer, and the rail's
 * socket (SimRailClient).
 */
export class ProxyNode {
  readonly service: SubmissionService;

  private constructor(
    readonly db: SimDatabase,
    private readonly ref: TestingModule,
  ) {
    this.service = ref.get(SubmissionService);
  }

  static async open(now: () => number, rail: SimRail): Promise<ProxyNode> {
    const db = await SimDatabase.shared('proxydb', now);
    const config = readRailProxyConfig(ENV);
    metrics ??= new RailProxyMetrics();
    const safety = new SafetyEvents(new Registry());
    const ref = await Test.createTestingModule({
      imports: [
        SubmissionsModule,
        simPlatform([
          [RAIL_PROXY_CONFIG, config],
          [SafetyEvents, safety],
          [DataSource, db.dataSource()],
        ]),
      ],
    })
      .overrideProvider(RailProxyMetrics)
      .useValue(metrics)
      .overrideProvider(RailClient)
      .useValue(new SimRailClient(rail))
      .overrideProvider(SubmissionProofs)
      .useValue(simSubmissionProofs(simGrantVerifier(now, 0)))
      .overrideProvider(ReceiptSigner)
      .useValue(new SimReceiptSigner())
      .compile();
    return new ProxyNode(db, ref);
  }

  close(): Promise<void> {
    return this.ref.close();
  }

  /** Every submission presented to the rail, in the order the proxy admitted them. */
  async presented(): Promise<{ accountId: string; payoutId: string; token: bigint }[]> {
    const rows = await this.db
      .dataSource()
      .manager.query<{ account_id: string; payout_id: string; token: string }[]>(
        `SELECT account_id, payout_id, presented_token::text AS token FROM rail_submission
        WHERE outcome IS DISTINCT FROM 'FENCED' AND outcome IS DISTINCT FROM 'WITHDRAWN'
        ORDER BY created_at, submission_id`,
      );
    return rows.map((r) => ({
      accountId: r.account_id,
      payoutId: r.payout_id,
      token: BigInt(r.token),
    }));
  }
}
