import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { railClientRef } from '@dlock/payout-contract';
import { migratedDatabase } from '@dlock/testing';
import { SubmissionRepository } from '../src/submission/persistence/submission.repository';
import type { StoredResponse } from '../src/submission/persistence/idempotency.repository';
import type { SubmissionRequest } from '../src/submission/domain/submission.types';

/**
 * Fence point (c)'s guards one statement at a time, in this process against a
 * real proxydb: the spawned-proxy tests show the same rules over HTTP, these
 * let the mutation run (npm run test:mutation) see the repository.
 */
describe('rail-proxy SubmissionRepository on a real proxydb', () => {
  let db: DataSource;
  let repo: SubmissionRepository;

  beforeAll(async () => {
    const url = await migratedDatabase('proxydb');
    db = await new DataSource({
      type: 'postgres',
      url,
      entities: [],
      extra: { max: 4 },
    }).initialize();
    repo = new SubmissionRepository(db);
  });
  afterAll(async () => {
    await db?.destroy();
  });

  function request(over: Partial<SubmissionRequest> = {}): SubmissionRequest {
    const payoutId = over.payoutId ?? randomUUID();
    return {
      presentedToken: 5n,
      // The repository keeps the grant proof the service verified before it, and checks nothing.
      grantProof: `grant-proof-of-${payoutId}`,
      instruction: undefined,
      ownerId: 'worker-a',
      idempotencyKey: `payout-${payoutId}-${randomUUID().slice(0, 4)}`,
      payoutId,
      accountId: `acct-${randomUUID().slice(0, 8)}`,
      amountMinor: 12_345,
      currency: 'EUR',
      beneficiaryRef: 'ben-1',
      clientRef: railClientRef(payoutId),
      traceId: '0'.repeat(32),
      ...over,
    };
  }

  /** admit() in its own committed transaction, as the service runs it. */
  function admit(req: SubmissionRequest, fencingEnforced = true) {
    return db.transaction((m) => repo.admit(m, req, `hash-${req.idempotencyKey}`, fencingEnforced));
  }

  const response: StoredResponse = { status: 200, body: { ok: true } };

  it('a first submission reserves its scope, sets the mark and records an unresolved intent', async () => {
    const req = request({ presentedToken: 9007199254740993n });
    const a = await admit(req);
    expect(a).toEqual({
      reserved: true,
      marked: true,
      mark: 9007199254740993n,
      intent: {
        submissionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        payoutId: req.payoutId,
        accountId: req.accountId,
        presentedToken: 9007199254740993n,
        ownerId: 'worker-a',
        clientRef: railClientRef(req.payoutId),
        amountMinor: 12_345,
        currency: 'EUR',
        beneficiaryRef: 'ben-1',
        fencingEnforced: true,
        outcome: null,
        railReference: null,
        errorCode: null,
        highestTokenSeen: null,
        createdAt: expect.any(Date),
        resolvedAt: null,
      },
    });
    await db.transaction(async (m) => {
      expect(await repo.highWater(m, req.accountId)).toBe(9007199254740993n);
      expect(await repo.findLive(m, req.payoutId)).toEqual(a.intent);
    });
    expect(await repo.find(a.intent!.submissionId)).toEqual(a.intent);
    expect(await repo.listByPayout(req.payoutId)).toEqual([a.intent]);
  });

  it('the same scope twice is a twin: nothing else moves', async () => {
    const req = request();
    await admit(req);
    expect(await admit(req)).toEqual({ reserved: false, marked: false, mark: null, intent: null });
    expect(await repo.listByPayout(req.payoutId)).toHaveLength(1);
  });

  it('an equal or lower token on the account does not move the mark and records no intent', async () => {
    const first = request({ presentedToken: 7n });
    await admit(first);
    for (const token of [7n, 6n]) {
      const stale = request({ accountId: first.accountId, presentedToken: token });
      expect(await admit(stale)).toEqual({
        reserved: true,
        marked: false,
        mark: null,
        intent: null,
      });
      expect(await repo.listByPayout(stale.payoutId)).toEqual([]);
    }
    const fenced = await db.transaction(async (m) => {
      const highest = await repo.highWater(m, first.accountId);
      expect(highest).toBe(7n);
      const stale = request({ accountId: first.accountId, presentedToken: 6n });
      return repo.insertFenced(m, stale, highest);
    });
    expect(fenced).toMatchObject({
      presentedToken: 6n,
      outcome: 'FENCED',
      errorCode: 'STALE_TOKEN',
      highestTokenSeen: 7n,
      resolvedAt: expect.any(Date),
    });
  });

  it('keeps the grant proof with the intent and the fenced attempt, in the same row, immutably', async () => {
    const first = request({ presentedToken: 11n });
    const { intent } = await admit(first);
    const stale = request({ accountId: first.accountId, presentedToken: 10n });
    const fenced = await db.transaction(async (m) =>
      repo.insertFenced(m, stale, await repo.highWater(m, first.accountId)),
    );
    const kept = async (submissionId: string) =>
      (
        await db.query(
          `SELECT grant_proof, grant_proof_kept FROM rail_submission WHERE submission_id = $1`,
          [submissionId],
        )
      )[0];
    expect(await kept(intent!.submissionId)).toEqual({
      grant_proof: first.grantProof,
      grant_proof_kept: true,
    });
    expect(await kept(fenced.submissionId)).toEqual({
      grant_proof: stale.grantProof,
      grant_proof_kept: true,
    });
    // Recording the outcome is the one update; the proof goes with the intent and stays.
    await expect(
      db.query(
        `UPDATE rail_submission SET outcome = 'ACKED', rail_reference = 'rr', grant_proof = 'other'
          WHERE submission_id = $1`,
        [intent!.submissionId],
      ),
    ).rejects.toThrow(/grant proof is immutable/);
    // Only a verified proof (one string) is ever kept.
    await expect(admit(request({ grantProof: undefined }))).rejects.toThrow(
      'only a verified grant proof is kept',
    );
  });

  it('a stale attempt retried leaves one FENCED row per payout and token', async () => {
    const first = request({ presentedToken: 9n });
    await admit(first);
    const stale = request({ accountId: first.accountId, presentedToken: 4n });
    const fence = (req: SubmissionRequest) =>
      db.transaction(async (m) =>
        repo.insertFenced(m, req, await repo.highWater(m, req.accountId)),
      );
    const once = await fence(stale);
    // Under another key (a scope of its own) the same payout and token find the row already there.
    const again = await fence({ ...stale, idempotencyKey: `${stale.idempotencyKey}-x` });
    expect(again.submissionId).toBe(once.submissionId);
    const older = await fence({ ...stale, presentedToken: 3n });
    expect(older.submissionId).not.toBe(once.submissionId);
    expect((await repo.listByPayout(stale.payoutId)).map((r) => r.presentedToken)).toEqual([
      4n,
      3n,
    ]);
  });

  it('a higher token raises the mark; a payout with a live submission gets no second intent', async () => {
    const first = request({ presentedToken: 7n });
    await admit(first);
    const again = request({
      accountId: first.accountId,
      payoutId: first.payoutId,
      presentedToken: 8n,
    });
    expect(await admit(again)).toEqual({ reserved: true, marked: true, mark: 8n, intent: null });
    expect(await repo.listByPayout(first.payoutId)).toHaveLength(1);
  });

  it('with the guard off the mark never falls, and shows the regression that was let through', async () => {
    const first = request({ presentedToken: 9n });
    await admit(first, false);
    const stale = request({ accountId: first.accountId, presentedToken: 4n });
    const a = await admit(stale, false);
    expect(a).toMatchObject({ reserved: true, marked: true, mark: 9n });
    expect(a.intent).toMatchObject({ presentedToken: 4n, fencingEnforced: false });
  });

  it('an outcome is recorded once, together with the scope answer; a resolved row cannot be withdrawn', async () => {
    const req = request();
    const { intent } = await admit(req);
    const id = intent!.submissionId;
    const scope = { key: req.idempotencyKey, token: req.presentedToken, response };
    const acked = await repo.resolve(id, 'ACKED', 'rr-1', null, scope);
    expect(acked).toMatchObject({
      submissionId: id,
      outcome: 'ACKED',
      railReference: 'rr-1',
      errorCode: null,
      resolvedAt: expect.any(Date),
    });
    expect(await repo.resolve(id, 'REJECTED', null, 'X', scope)).toBeNull();
    expect(await db.transaction((m) => repo.withdraw(m, id, 'late'))).toBe(false);
    const stored: { response: unknown; submission_id: string }[] = await db.query(
      `SELECT response, submission_id FROM rail_idempotency WHERE idempotency_key = $1`,
      [req.idempotencyKey],
    );
    expect(stored).toEqual([{ response, submission_id: id }]);
    expect(await repo.find(randomUUID())).toBeNull();
  });

  it('a withdrawn intent stops being live, so the payout may be submitted again', async () => {
    const req = request({ presentedToken: 3n });
    const { intent } = await admit(req);
    expect(await db.transaction((m) => repo.withdraw(m, intent!.submissionId, 'no-bytes'))).toBe(
      true,
    );
    await db.transaction(async (m) => expect(await repo.findLive(m, req.payoutId)).toBeNull());
    const retry = request({ payoutId: req.payoutId, accountId: req.accountId, presentedToken: 4n });
    const again = await admit(retry);
    expect(again.intent).toMatchObject({ presentedToken: 4n, outcome: null });
    const all = await repo.listByPayout(req.payoutId);
    expect(all.map((r) => [r.outcome, r.errorCode])).toEqual([
      ['WITHDRAWN', 'no-bytes'],
      [null, null],
    ]);
  });

  describe('admitAtOnce: the same statement alone, all or nothing', () => {
    /** What proxydb holds for a request: its scope, the account's mark, the payout's rows. */
    async function traces(req: SubmissionRequest) {
      const scopes: unknown[] = await db.query(
        `SELECT 1 FROM rail_idempotency WHERE idempotency_key = $1`,
        [req.idempotencyKey],
      );
      const marks: { highest_token: string }[] = await db.query(
        `SELECT highest_token FROM rail_high_water WHERE account_id = $1`,
        [req.accountId],
      );
      return {
        scopes: scopes.length,
        mark: marks[0]?.highest_token ?? null,
        rows: (await repo.listByPayout(req.payoutId)).length,
      };
    }

    it('an admitted request commits its scope, the mark and the intent in one statement', async () => {
      const req = request({ presentedToken: 9007199254740995n });
      const a = await repo.admitAtOnce(req, 'h', true);
      expect(a).toEqual({
        mark: 9007199254740995n,
        intent: expect.objectContaining({
          payoutId: req.payoutId,
          presentedToken: 9007199254740995n,
          outcome: null,
        }),
      });
      expect(await traces(req)).toEqual({ scopes: 1, mark: '9007199254740995', rows: 1 });
      expect(await repo.find(a!.intent.submissionId)).toEqual(a!.intent);
    });

    it('a twin, a stale token and a payout with a live submission write nothing at all', async () => {
      const first = request({ presentedToken: 7n });
      expect(await repo.admitAtOnce(first, 'h', true)).not.toBeNull();
      const twin = { ...first };
      const stale = request({ accountId: first.accountId, presentedToken: 7n });
      const live = request({
        accountId: first.accountId,
        payoutId: first.payoutId,
        presentedToken: 8n,
      });
      expect(await repo.admitAtOnce(twin, 'h', true)).toBeNull();
      expect(await repo.admitAtOnce(stale, 'h', true)).toBeNull();
      expect(await repo.admitAtOnce(live, 'h', true)).toBeNull();
      // The twin's scope is the first's; the others reserved none, and 8 did not raise the mark.
      expect(await traces(first)).toEqual({ scopes: 1, mark: '7', rows: 1 });
      expect(await traces(stale)).toEqual({ scopes: 0, mark: '7', rows: 0 });
      expect(await traces(live)).toEqual({ scopes: 0, mark: '7', rows: 1 });
      // The transactional statement still tells them apart, as the service's fallback needs.
      expect(await admit(live)).toMatchObject({ reserved: true, marked: true, intent: null });
    });

    it('with the guard off a lower token is admitted and shows the regression', async () => {
      const first = request({ presentedToken: 9n });
      await repo.admitAtOnce(first, 'h', false);
      const stale = request({ accountId: first.accountId, presentedToken: 4n });
      const a = await repo.admitAtOnce(stale, 'h', false);
      expect(a).toMatchObject({ mark: 9n, intent: { presentedToken: 4n, fencingEnforced: false } });
    });

    it('a database failure is thrown, not taken for a refusal', async () => {
      const req = request({ amountMinor: 1.5 }); // not a bigint: the database refuses the value
      await expect(repo.admitAtOnce(req, 'h', true)).rejects.toThrow();
      expect(await traces(req)).toEqual({ scopes: 0, mark: null, rows: 0 });
    });
  });

  it('an account without a mark is a broken invariant, not a token of 0', async () => {
    await expect(
      db.transaction((m) => repo.highWater(m, `acct-${randomUUID().slice(0, 8)}`)),
    ).rejects.toThrow(/has no mark/);
  });
});
