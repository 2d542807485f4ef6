import { Test, type TestingModule } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import type { FenceCredential } from '@dlock/lock-api';
import { ProofVerifier } from '@dlock/identity';
import { SafetyEvents } from '@dlock/observability';
import type { PayoutEvent, PayoutState } from '@dlock/payout-contract';
import { IntakeRepository } from '../../../payment-resource/src/accounts/persistence/intake.repository';
import { IntakeService } from '../../../payment-resource/src/accounts/service/intake.service';
import {
  PAYMENT_CONFIG,
  readPaymentConfig,
  type PaymentConfig,
} from '../../../payment-resource/src/config';
import { AccountRepository } from '../../../payment-resource/src/ledger/persistence/account.repository';
import { LedgerRepository } from '../../../payment-resource/src/ledger/persistence/ledger.repository';
import { PaymentMetrics } from '../../../payment-resource/src/payment.metrics';
import { PayoutRepository } from '../../../payment-resource/src/payouts/persistence/payout.repository';
import { PayoutsModule } from '../../../payment-resource/src/payouts/payouts.module';
import { GrantCheck } from '../../../payment-resource/src/payouts/service/grant-check.service';
import { InstructionSigner } from '../../../payment-resource/src/payouts/service/instruction-signer.service';
import { PayoutCommands } from '../../../payment-resource/src/payouts/service/payout-commands.service';
import { PayoutQueries } from '../../../payment-resource/src/payouts/service/payout-queries.service';
import { ReceiptCheck } from '../../../payment-resource/src/payouts/service/receipt-check.service';
import type { Grant } from '../../../payment-resource/src/payouts/service/payout-commands.service';
import type { SimPayout } from './payout-world.model';
import { decodeSimProof, simGrantVerifier } from './sim-proofs.sim';
import { SimDatabase } from './sim-database.sim';
import { simPlatform } from './sim-platform.sim';

/** One write payment-resource admitted, in commit order (paydb's payout_transition): what the checks read. */
export interface AdmittedWrite {
  at: number;
  accountId: string;
  payoutId: string;
  token: bigint;
  event: PayoutEvent;
  from: PayoutState;
  to: PayoutState;
}

/**
 * GrantCheck's checks with its verifier on virtual time (sim-proofs.sim.ts): the
 * lock-server's signature, key and type, then the claims.
 */
class SimGrantCheck extends GrantCheck {
  constructor(
    config: PaymentConfig,
    safety: SafetyEvents,
    private readonly grants: ProofVerifier,
  ) {
    super(config, safety);
  }

  override onModuleInit(): Promise<void> {
    return Promise.resolve();
  }

  protected override verify(proof: string | string[] | undefined): Promise<unknown> {
    return this.grants.verify(proof);
  }
}

/** Reads the rail-proxy's simulated receipts (sim-proofs.sim.ts); every check of them is the real one. */
class SimReceiptCheck extends ReceiptCheck {
  override onModuleInit(): Promise<void> {
    return Promise.resolve();
  }

  protected override verify(receipt: string | string[] | undefined): Promise<unknown> {
    return Promise.resolve().then(() => decodeSimProof(receipt));
  }
}

/** The instruction's signature is not simulated either: its claims, unsigned. */
const simInstructions = {
  sign: (payout: { payoutId: string }, token: bigint, ownerId: string) =>
    `sim-instruction.${payout.payoutId}.${token}.${ownerId}`,
};

const ENV = {
  PAYDB_URL: 'postgres://sim@pglite/paydb',
  AUTH_JWKS: 'sim',
  AUTH_ISSUER: 'sim',
  AUTH_POLICY: 'sim',
  GRANT_JWKS: 'sim',
  INSTRUCTION_SIGNING_KEYS: 'sim',
  RECEIPT_JWKS: 'sim',
  // Deadlines are the network's in the simulation: the service's own, on the wall clock, never bind.
  PAYDB_STATEMENT_TIMEOUT_MS: '500000',
  PAYMENT_REQUEST_BUDGET_MS: '600000',
};

/** prom-client's default registry takes each metric once: one per process. */
let metrics: PaymentMetrics | undefined;

/**
 * payment-resource in the simulation: its real PayoutsModule (PayoutCommands,
 * FencedWriter, the repositories and their SQL, the transition table) on
 * paydb's real schema in PGlite, built afresh for every seed. Replaced: the
 * grant verifier's clock, the receipts' and instructions' signatures (above)
 * and the HTTP layer; `fencingEnabled` false is
 * the service's own kill switch (PAYMENT_FENCING_ENABLED), the negative control.
 */
export class PaymentNode {
  /** Each payout's state after the last request: the worker's poll reads it. */
  readonly states = new Map<string, PayoutState>();

  readonly commands: PayoutCommands;
  readonly queries: PayoutQueries;

  private constructor(
    readonly db: SimDatabase,
    private readonly ref: TestingModule,
    private readonly intake: IntakeService,
  ) {
    this.commands = ref.get(PayoutCommands);
    this.queries = ref.get(PayoutQueries);
  }

  static async open(now: () => number, fencingEnabled: boolean): Promise<PaymentNode> {
    const db = await SimDatabase.shared('paydb', now);
    const ds = db.dataSource();
    const config = readPaymentConfig({
      ...ENV,
      PAYMENT_FENCING_ENABLED: String(fencingEnabled),
      // The kill switch is refused outside a harness (assertKillSwitchAllowed).
      DLOCK_HARNESS: '1',
    });
    metrics ??= new PaymentMetrics();
    const safety = new SafetyEvents(new Registry());
    const ref = await Test.createTestingModule({
      imports: [
        PayoutsModule,
        simPlatform([
          [PAYMENT_CONFIG, config],
          [SafetyEvents, safety],
        ]),
      ],
    })
      .overrideProvider(DataSource)
      .useValue(ds)
      .overrideProvider(PaymentMetrics)
      .useValue(metrics)
      .overrideProvider(GrantCheck)
      .useValue(new SimGrantCheck(config, safety, simGrantVerifier(now)))
      .overrideProvider(ReceiptCheck)
      .useValue(new SimReceiptCheck(config, safety))
      .overrideProvider(InstructionSigner)
      .useValue(simInstructions)
      .compile();
    const intake = new IntakeService(
      ds,
      new AccountRepository(),
      new LedgerRepository(),
      new PayoutRepository(),
      new IntakeRepository(),
    );
    return new PaymentNode(db, ref, intake);
  }

  close(): Promise<void> {
    return this.ref.close();
  }

  /** The run's accounts and payouts, through the intake service (as the fixtures are made). */
  async seed(accounts: { accountId: string; balanceMinor: number }[], amounts: number[][]) {
    const payouts: SimPayout[] = [];
    for (const [a, { accountId, balanceMinor }] of accounts.entries()) {
      await this.intake.openAccount(`open-${accountId}`, { accountId, currency: 'EUR' });
      await this.intake.deposit(`fund-${accountId}`, accountId, {
        amountMinor: balanceMinor,
        currency: 'EUR',
      });
      for (const [i, amountMinor] of amounts[a].entries()) {
        const beneficiaryRef = `ben-${a}-${i}`;
        const created = await this.intake.createPayout(`payout-${accountId}-${i}`, {
          accountId,
          amountMinor,
          currency: 'EUR',
          beneficiaryRef,
        });
        payouts.push({ payoutId: created.body.payoutId, accountId, amountMinor, beneficiaryRef });
        this.states.set(created.body.payoutId, 'PENDING');
      }
    }
    return payouts;
  }

  /** The protected-write headers the real client sends (protectedHeaders), as the controller parses them. */
  grant(payoutId: string, fence: FenceCredential, ownerId: string, idempotencyKey: string): Grant {
    return { token: fence.token, proof: fence.proof, ownerId, idempotencyKey, traceId: payoutId };
  }

  /** After each request: the payouts' states as committed. */
  async refresh(): Promise<void> {
    const rows = await this.db.dataSource().manager.query<
      {
        payout_id: string;
        state: PayoutState;
      }[]
    >(`SELECT payout_id, state FROM payout ORDER BY payout_id`);
    for (const r of rows) this.states.set(r.payout_id, r.state);
  }

  /** Every admitted transition, in commit order, with the virtual ms the database stamped it at. */
  async admitted(epochMs: number): Promise<AdmittedWrite[]> {
    const rows = await this.db.dataSource().manager.query<
      {
        payout_id: string;
        account_id: string;
        token: string;
        event: PayoutEvent;
        from_state: PayoutState;
        to_state: PayoutState;
        created_at: Date;
      }[]
    >(
      `SELECT t.payout_id, p.account_id, t.token::text AS token, t.event, t.from_state, t.to_state,
              t.created_at
         FROM payout_transition t JOIN payout p USING (payout_id)
        WHERE t.token IS NOT NULL
        ORDER BY t.transition_id`,
    );
    return rows.map((r) => ({
      at: r.created_at.getTime() - epochMs,
      accountId: r.account_id,
      payoutId: r.payout_id,
      token: BigInt(r.token),
      event: r.event,
      from: r.from_state,
      to: r.to_state,
    }));
  }

  /** Each customer account's balance, and how many ledger groups each payout posted. */
  async ledger(): Promise<{ balances: Map<string, number>; postings: Map<string, number> }> {
    const m = this.db.dataSource().manager;
    const accounts = await m.query<{ account_id: string; b: string }[]>(
      `SELECT account_id, balance_minor::text AS b FROM account WHERE kind = 'CUSTOMER'`,
    );
    const posted = await m.query<{ payout_id: string; n: number }[]>(
      `SELECT payout_id, count(DISTINCT txn_group_id)::int AS n FROM ledger_entry
        WHERE payout_id IS NOT NULL GROUP BY payout_id`,
    );
    return {
      balances: new Map(accounts.map((a) => [a.account_id, Number(a.b)])),
      postings: new Map(posted.map((p) => [p.payout_id, p.n])),
    };
  }
}
