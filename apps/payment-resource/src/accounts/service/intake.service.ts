import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DlockError, ValidationError, formatFencingToken } from '@dlock/lock-api';
import {
  railClientRef,
  type CreateAccountRequest,
  type CreatedAccount,
  type CreatedPayout,
  type CreatePayoutRequest,
  type DepositRequest,
  type DepositResponse,
} from '@dlock/payout-contract';
import { rowId } from '@dlock/persistence';
import { balancedPair, fundingAccountId } from '../../ledger/domain/ledger.rules';
import { AccountRepository, type Account } from '../../ledger/persistence/account.repository';
import type { Db } from '../../persistence/paydb.sql';
import { IntakeRepository, type IntakeKey } from '../persistence/intake.repository';
import { LedgerRepository } from '../../ledger/persistence/ledger.repository';
import { PayoutRepository } from '../../payouts/persistence/payout.repository';
import { requestHash } from '../../payouts/domain/request-hash.codec';

export interface IntakeAnswer<T> {
  statusCode: number;
  body: T;
  /** True when the key had already been answered and this is that answer again. */
  replayed: boolean;
}

/** System accounts are named by currency (domain/ledger.rules.ts); a customer may not take those names. */
const RESERVED_PREFIXES = ['funding-', 'clearing-'];

/**
 * The only way accounts, deposits and payouts come into being: the payouts
 * API and the fixtures CLI both call this (docs/payment-resource.md, "Creating accounts,
 * deposits and payouts"). Every creation runs under an idempotency key: the
 * same key and body answer what the first request answered, a different body
 * under a used key is IDEMPOTENCY_CONFLICT, and a concurrent duplicate waits
 * for the first and then replays it (intake.repository.ts).
 */
@Injectable()
export class IntakeService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly accounts: AccountRepository,
    private readonly ledger: LedgerRepository,
    private readonly payouts: PayoutRepository,
    private readonly intake: IntakeRepository,
  ) {}

  openAccount(
    idempotencyKey: string,
    req: CreateAccountRequest,
  ): Promise<IntakeAnswer<CreatedAccount>> {
    const accountId = req.accountId ?? `acct-${randomUUID()}`;
    if (RESERVED_PREFIXES.some((p) => accountId.startsWith(p))) {
      throw new ValidationError([{ field: 'accountId', message: 'names a system account' }]);
    }
    const key: IntakeKey = { operation: 'create_account', idempotencyKey };
    return this.once(key, '', req, accountId, async (tx) => {
      if (!(await this.accounts.insertCustomer(tx, accountId, req.currency))) {
        throw new ValidationError([{ field: 'accountId', message: 'is taken by another account' }]);
      }
      await this.accounts.ensureSystem(tx, fundingAccountId(req.currency), 'FUNDING', req.currency);
      return accountBody(await this.mustFind(tx, accountId));
    });
  }

  deposit(
    idempotencyKey: string,
    accountId: string,
    req: DepositRequest,
  ): Promise<IntakeAnswer<DepositResponse>> {
    const key: IntakeKey = { operation: 'deposit', idempotencyKey };
    const depositId = rowId();
    return this.once(key, accountId, req, depositId, async (tx) => {
      const account = await this.customer(tx, accountId, req.currency);
      const funding = fundingAccountId(account.currency);
      await this.accounts.ensureSystem(tx, funding, 'FUNDING', account.currency);
      const { balances } = await this.ledger.post(
        tx,
        balancedPair(funding, accountId, req.amountMinor),
        { kind: 'DEPOSIT', txnGroupId: depositId },
      );
      const moved = balances.get(accountId);
      assert.ok(moved, 'a deposit that did not move its account');
      return {
        depositId,
        accountId,
        amountMinor: req.amountMinor,
        currency: account.currency,
        balanceMinor: moved.balanceMinor,
      };
    });
  }

  createPayout(
    idempotencyKey: string,
    req: CreatePayoutRequest,
  ): Promise<IntakeAnswer<CreatedPayout>> {
    const key: IntakeKey = { operation: 'create_payout', idempotencyKey };
    const payoutId = rowId();
    return this.once(key, '', req, payoutId, async (tx) => {
      const account = await this.customer(tx, req.accountId, req.currency);
      const payout = {
        payoutId,
        accountId: account.accountId,
        amountMinor: req.amountMinor,
        currency: account.currency,
        beneficiaryRef: req.beneficiaryRef,
        clientRef: railClientRef(payoutId),
      };
      await this.payouts.insert(tx, payout);
      return { ...payout, state: 'PENDING' as const };
    });
  }

  /** Runs `create` once per key; see the class comment. */
  private async once<T>(
    key: IntakeKey,
    scope: string,
    request: object,
    resourceId: string,
    create: (tx: Db) => Promise<T>,
  ): Promise<IntakeAnswer<T>> {
    const hash = requestHash(`${key.operation}:${scope}`, request);
    const body = await this.dataSource.transaction(async (tx) => {
      if (!(await this.intake.take(tx, key, hash, resourceId))) return null;
      const created = await create(tx);
      await this.intake.answer(tx, key, 201, JSON.stringify(created));
      return created;
    });
    if (body !== null) return { statusCode: 201, body, replayed: false };
    const stored = await this.intake.find(this.dataSource, key);
    assert.ok(stored, 'an answered idempotency key vanished'); // rows are never deleted
    if (stored.requestHash !== hash) {
      throw new DlockError(
        'IDEMPOTENCY_CONFLICT',
        'this Idempotency-Key was used with a different request',
        { details: { idempotencyKey: key.idempotencyKey } },
      );
    }
    const replayed = JSON.parse(stored.body) as T; // written by this code from a T
    return { statusCode: stored.statusCode, body: replayed, replayed: true };
  }

  /** A customer account in `currency`; an unknown or system account is 404. */
  private async customer(tx: Db, accountId: string, currency: string): Promise<Account> {
    const account = await this.accounts.find(tx, accountId);
    if (!account || account.kind !== 'CUSTOMER') {
      throw new DlockError('NOT_FOUND', 'no such account', { details: { accountId } });
    }
    if (account.currency !== currency) {
      throw new ValidationError([
        { field: 'currency', message: `must be the account's currency (${account.currency})` },
      ]);
    }
    return account;
  }

  private async mustFind(tx: Db, accountId: string): Promise<Account> {
    const account = await this.accounts.find(tx, accountId);
    assert.ok(account, `account ${accountId} vanished in its own transaction`);
    return account;
  }
}

function accountBody(a: Account): CreatedAccount {
  assert.equal(a.kind, 'CUSTOMER');
  return {
    accountId: a.accountId,
    kind: 'CUSTOMER',
    currency: a.currency,
    balanceMinor: a.balanceMinor,
    fence: formatFencingToken(a.fence),
  };
}
