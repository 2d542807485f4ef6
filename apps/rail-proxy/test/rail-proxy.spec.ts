import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  REPO_ROOT,
  http,
  migratedDatabase,
  type RunningApp,
  scratchDir,
  scrapeSeries,
} from '@dlock/testing';
import { railClientRef } from '@dlock/payout-contract';
import {
  ISO,
  TRACE,
  UUID,
  highWater,
  idempotencyRows,
  keptGrant,
  keyOf,
  newPayout,
  rowsOf,
  scriptStub,
  startProxy,
  startStub,
  stubStats,
  submit,
  transfersFor,
} from './rail-fixtures';

describe('rail-proxy: fence point (c) between a real proxydb and a real, hostile rail', () => {
  let db: string;
  let stub: RunningApp;
  let proxy: RunningApp;
  // Every statement the proxy sends, as bench:e2e records them (bench/e2e/sql-recorder.cjs).
  const sqlLog = path.join(scratchDir('rail-proxy-sql-'), 'sql.jsonl');

  beforeAll(async () => {
    db = await migratedDatabase('proxydb');
    stub = await startStub({ RAIL_STUB_HOLD_MS: '3000' });
    proxy = await startProxy(db, stub.url, {
      NODE_OPTIONS: `--require ${path.join(REPO_ROOT, 'bench', 'e2e', 'sql-recorder.cjs')}`,
      BENCH_SQL_RECORD: sqlLog,
    });
  });

  /** The admission and outcome statements `fn` made the proxy send: first words, errors marked. */
  async function statementsDuring(fn: () => Promise<unknown>): Promise<string[]> {
    const lines = () => readFileSync(sqlLog, 'utf8').split('\n').filter(Boolean);
    const before = lines().length;
    await fn();
    return lines()
      .slice(before)
      .map((l) => JSON.parse(l) as { text: string; error?: string })
      .filter((r) => /rail_|^\s*(START TRANSACTION|COMMIT|ROLLBACK)/.test(r.text))
      .map((r) => r.text.trim().split(/\s+/).slice(0, 2).join(' ') + (r.error ? ' (error)' : ''));
  }
  afterAll(async () => {
    await proxy?.stop();
    await stub?.stop();
  });

  it('acks once, records ACKED, replays the same key+token+body verbatim (int64 token intact)', async () => {
    const p = newPayout();
    const token = '9007199254740993'; // 2^53 + 1
    const res = await submit(proxy.url, p, token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      submissionId: UUID,
      payoutId: p.payoutId,
      presentedToken: token,
      outcome: 'ACKED',
      railReference: expect.stringMatching(/^rr-/),
      submittedAt: ISO,
      resolvedAt: ISO,
      railReceipt: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
    });
    expect(res.text).toContain(`"presentedToken":"${token}"`);

    const rows = await rowsOf(db, p.payoutId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      submission_id: res.body.submissionId,
      outcome: 'ACKED',
      presented_token: token,
      client_ref: railClientRef(p.payoutId),
      rail_reference: res.body.railReference,
      grant_proof_kept: true,
    });
    // The grant proof it was admitted on, kept with the intent for the reconciler (INV-07).
    expect(keptGrant(rows[0])).toMatchObject({
      key: `payout:${p.accountId}`,
      tok: token,
      sub: 'worker-1',
    });
    expect(await highWater(db, p.accountId)).toBe(token);
    const transfers = await transfersFor(stub.url, railClientRef(p.payoutId));
    expect(transfers).toEqual([
      expect.objectContaining({
        railReference: res.body.railReference,
        amountMinor: p.amountMinor,
        currency: 'EUR',
      }),
    ]);

    const before = await stubStats(stub.url);
    const replay = await submit(proxy.url, p, token);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(res.body);
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
    expect(await rowsOf(db, p.payoutId)).toHaveLength(1);

    const conflict = await submit(proxy.url, p, token, {
      body: { ...p, amountMinor: p.amountMinor + 1 },
    });
    expect(conflict.status).toBe(422);
    expect(conflict.body).toEqual({
      code: 'IDEMPOTENCY_CONFLICT',
      message: expect.any(String),
      retrySafe: false,
      traceId: TRACE,
    });

    const r2 = await http('GET', `${proxy.url}/v1/rail/submissions/${p.payoutId}`);
    expect(r2.status).toBe(200);
    expect(r2.body).toEqual({
      payoutId: p.payoutId,
      submissions: [
        {
          submissionId: res.body.submissionId,
          payoutId: p.payoutId,
          accountId: p.accountId,
          presentedToken: token,
          ownerId: 'worker-1',
          clientRef: railClientRef(p.payoutId),
          amountMinor: p.amountMinor,
          currency: 'EUR',
          outcome: 'ACKED',
          railReference: res.body.railReference,
          errorCode: null,
          submittedAt: res.body.submittedAt,
          resolvedAt: res.body.resolvedAt,
          // The receipt of a record is the same bytes each time it is signed (docs/rail.md, "Receipts").
          railReceipt: res.body.railReceipt,
        },
      ],
    });
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
  });

  it('identical requests at the same moment reach the rail once and all get the same answer', async () => {
    const p = newPayout();
    const before = await stubStats(stub.url);
    const answers = await Promise.all(Array.from({ length: 8 }, () => submit(proxy.url, p, '12')));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    for (const a of answers) expect(a.body).toEqual(answers[0].body);
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived + 1);
    expect((await rowsOf(db, p.payoutId)).map((r) => r.outcome)).toEqual(['ACKED']);
  });

  it('a decline is 422 VALIDATION_FAILED with outcome REJECTED, recorded once, nothing moved', async () => {
    const p = newPayout();
    await scriptStub(stub.url, ['decline']);
    const before = await stubStats(stub.url);
    const res = await submit(proxy.url, p, '7');
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: expect.any(String),
      retrySafe: false,
      details: {
        payoutId: p.payoutId,
        submissionId: UUID,
        outcome: 'REJECTED',
        railStatus: 402,
        railReceipt: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      },
      traceId: TRACE,
    });
    const rows = await rowsOf(db, p.payoutId);
    expect(rows.map((r) => [r.outcome, r.error_code])).toEqual([['REJECTED', 'RAIL_HTTP_402']]);
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived + 1);
    expect(await transfersFor(stub.url, railClientRef(p.payoutId))).toEqual([]);
  });

  it('a held connection is TIMEOUT + 409 RAIL_AMBIGUOUS, and nothing ever presents that payout again', async () => {
    const p = newPayout();
    await scriptStub(stub.url, ['hold-accepted']);
    const before = await stubStats(stub.url);
    const ambiguousBefore = await scrapeSeries(proxy.url, 'rail_ambiguous_total', 'zero');
    const duplicatesBefore = await scrapeSeries(
      proxy.url,
      'rail_duplicate_attempted_total',
      'zero',
    );

    const started = Date.now();
    const res = await submit(proxy.url, p, '10');
    const elapsedMs = Date.now() - started;
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: 'RAIL_AMBIGUOUS',
      message: expect.any(String),
      retrySafe: false,
      details: {
        payoutId: p.payoutId,
        submissionId: UUID,
        outcome: 'TIMEOUT',
        reason: 'read-timeout',
      },
      traceId: TRACE,
    });
    // The proxy's 500 ms read timeout decided, not the stub's 3 s hold.
    expect(elapsedMs).toBeLessThan(2_500);
    const rows = await rowsOf(db, p.payoutId);
    expect(rows.map((r) => r.outcome)).toEqual(['TIMEOUT']);
    const after = await stubStats(stub.url);
    expect(after.submitsReceived).toBe(before.submitsReceived + 1);
    // The hazard is real: the rail booked it although nobody heard the ack.
    expect(await transfersFor(stub.url, railClientRef(p.payoutId))).toHaveLength(1);
    expect(await scrapeSeries(proxy.url, 'rail_ambiguous_total', 'throw')).toBe(
      ambiguousBefore + 1,
    );

    // A later holder (newer token, same stable key): DUPLICATE_SUBMISSION.
    const newer = await submit(proxy.url, p, '11', { ownerId: 'worker-2' });
    expect(newer.status).toBe(409);
    expect(newer.body).toEqual({
      code: 'DUPLICATE_SUBMISSION',
      message: expect.any(String),
      retrySafe: false,
      details: {
        payoutId: p.payoutId,
        existingSubmissionId: res.body.details.submissionId,
        existingOutcome: 'TIMEOUT',
        existingPresentedToken: '10',
      },
      traceId: TRACE,
    });
    // The same token under a fresh key: only the payout's own key is taken (docs/rail.md).
    const sameToken = await submit(proxy.url, p, '10', { key: `${keyOf(p)}-regenerated` });
    expect(sameToken.status).toBe(400);
    expect(sameToken.body.code).toBe('VALIDATION_FAILED');
    expect(sameToken.body.details.fields[0].field).toBe('X-Idempotency-Key');
    // The exact retry (same key, token, body) gets the original answer back.
    const retry = await submit(proxy.url, p, '10');
    expect(retry.status).toBe(409);
    expect(retry.body).toEqual({ ...res.body, traceId: TRACE });

    expect((await stubStats(stub.url)).submitsReceived).toBe(after.submitsReceived);
    expect(await transfersFor(stub.url, railClientRef(p.payoutId))).toHaveLength(1);
    expect((await rowsOf(db, p.payoutId)).map((r) => r.outcome)).toEqual(['TIMEOUT']);
    expect(await scrapeSeries(proxy.url, 'rail_duplicate_attempted_total', 'throw')).toBe(
      duplicatesBefore + 1,
    );
    expect(proxy.output()).toContain('"event":"duplicate_rail_submission_attempted"');
    expect(proxy.output()).toContain('"event":"rail_ambiguous"');
  });

  it('a 5xx, a reset and an unreadable 200 are ambiguous too (TIMEOUT), never a decline', async () => {
    await scriptStub(stub.url, ['error-accepted', 'reset', 'ack-malformed']);
    const expected = ['rail-5xx', 'connection-reset', 'malformed-ack'];
    for (const reason of expected) {
      const p = newPayout();
      const res = await submit(proxy.url, p, '3');
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('RAIL_AMBIGUOUS');
      expect(res.body.details).toEqual({
        payoutId: p.payoutId,
        submissionId: UUID,
        outcome: 'TIMEOUT',
        reason,
      });
      const rows = await rowsOf(db, p.payoutId);
      expect(rows.map((r) => [r.outcome, r.error_code])).toEqual([
        ['TIMEOUT', reason.toUpperCase()],
      ]);
    }
  });

  it('a 4xx other than 402 is ambiguous, booked or not: only the explicit decline proves nothing moved', async () => {
    const fates = ['reject-400', 'reject-409-accepted', 'reject-429'] as const;
    await scriptStub(stub.url, [...fates]);
    for (const fate of fates) {
      const p = newPayout();
      const res = await submit(proxy.url, p, '3');
      expect({ fate, status: res.status, code: res.body.code }).toEqual({
        fate,
        status: 409,
        code: 'RAIL_AMBIGUOUS',
      });
      expect(res.body.retrySafe).toBe(false);
      expect(res.body.details).toEqual({
        payoutId: p.payoutId,
        submissionId: UUID,
        outcome: 'TIMEOUT',
        reason: 'unexpected-status',
      });
      const rows = await rowsOf(db, p.payoutId);
      expect(rows.map((r) => r.outcome)).toEqual(['TIMEOUT']);
      const booked = await transfersFor(stub.url, railClientRef(p.payoutId));
      expect(booked).toHaveLength(fate.endsWith('-accepted') ? 1 : 0);
    }
  });

  it('a stale token is FENCED_OUT with outcome FENCED and no rail call; the legitimate holder still submits', async () => {
    const first = newPayout();
    const second = newPayout(first.accountId);
    const fencedBefore = await scrapeSeries(
      proxy.url,
      'lock_fenced_out_total{resource="rail"}',
      'zero',
    );
    expect((await submit(proxy.url, first, '20', { ownerId: 'worker-new' })).status).toBe(200);
    const before = await stubStats(stub.url);

    const stale = await submit(proxy.url, second, '15', { ownerId: 'worker-stale' });
    expect(stale.status).toBe(409);
    expect(stale.body).toEqual({
      code: 'FENCED_OUT',
      message: expect.any(String),
      retrySafe: false,
      details: {
        presentedToken: '15',
        highestToken: '20',
        resourceType: 'rail',
        resourceId: first.accountId,
        ownerId: 'worker-stale',
      },
      traceId: TRACE,
    });
    // Strictly greater: an equal token is refused as well (docs/rail.md).
    const equal = await submit(proxy.url, second, '20');
    expect(equal.status).toBe(409);
    expect(equal.body.details.highestToken).toBe('20');
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
    const fencedRows = await rowsOf(db, second.payoutId);
    expect(fencedRows.map((r) => [r.outcome, r.presented_token, r.highest_token_seen])).toEqual([
      ['FENCED', '15', '20'],
      ['FENCED', '20', '20'],
    ]);
    // A fenced attempt keeps the proof it presented too.
    expect(fencedRows.map((r) => [keptGrant(r).tok, keptGrant(r).sub])).toEqual([
      ['15', 'worker-stale'],
      ['20', 'worker-1'],
    ]);
    expect(await highWater(db, first.accountId)).toBe('20');

    const legit = await submit(proxy.url, second, '21', { ownerId: 'worker-legit' });
    expect(legit.status).toBe(200);
    expect(legit.body.outcome).toBe('ACKED');
    expect(await transfersFor(stub.url, railClientRef(second.payoutId))).toHaveLength(1);
    const r2 = await http('GET', `${proxy.url}/v1/rail/submissions/${second.payoutId}`);
    expect(r2.body.submissions.map((s: { outcome: string }) => s.outcome)).toEqual([
      'FENCED',
      'FENCED',
      'ACKED',
    ]);
    expect(await scrapeSeries(proxy.url, 'lock_fenced_out_total{resource="rail"}', 'throw')).toBe(
      fencedBefore + 2,
    );
    expect(
      await scrapeSeries(proxy.url, 'rail_submission_total{outcome="fenced"}', 'throw'),
    ).toBeGreaterThan(0);
    // R1 runs without the request logger context; the trace id is passed explicitly.
    const fencedLine = proxy
      .output()
      .split('\n')
      .find((l) => l.includes('"event":"fenced_out"') && l.includes('"presentedToken":"15"'));
    expect(JSON.parse(fencedLine!)).toMatchObject({
      event: 'fenced_out',
      ownerId: 'worker-stale',
      traceId: stale.body.traceId,
    });
  });

  it('a revoked holder retrying 50 times under fresh keys or the payout key leaves one FENCED row', async () => {
    const first = newPayout();
    const second = newPayout(first.accountId);
    expect((await submit(proxy.url, first, '60')).status).toBe(200);
    const received = (await stubStats(stub.url)).submitsReceived;
    const fencedBefore = await scrapeSeries(
      proxy.url,
      'lock_fenced_out_total{resource="rail"}',
      'zero',
    );
    const freshKeys = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        submit(proxy.url, second, '59', { ownerId: 'revoked', key: `payout-${randomUUID()}-${i}` }),
      ),
    );
    // Another payout's key, and the payout's own key with its id in capitals, are not its key.
    freshKeys.push(await submit(proxy.url, second, '59', { key: keyOf(first) }));
    freshKeys.push(
      await submit(proxy.url, second, '59', { key: `payout-${second.payoutId.toUpperCase()}` }),
    );
    expect(new Set(freshKeys.map((r) => `${r.status} ${r.body.code}`))).toEqual(
      new Set(['400 VALIDATION_FAILED']),
    );
    expect(await rowsOf(db, second.payoutId)).toEqual([]);
    expect(await idempotencyRows(db, keyOf(second))).toBe(0);

    const stable = [];
    for (let i = 0; i < 50; i++) stable.push(await submit(proxy.url, second, '59'));
    expect(new Set(stable.map((r) => `${r.status} ${r.body.code}`))).toEqual(
      new Set(['409 FENCED_OUT']),
    );
    expect((await rowsOf(db, second.payoutId)).map((r) => r.outcome)).toEqual(['FENCED']);
    expect(await scrapeSeries(proxy.url, 'lock_fenced_out_total{resource="rail"}', 'throw')).toBe(
      fencedBefore + 1,
    );
    expect((await stubStats(stub.url)).submitsReceived).toBe(received);
    // The honest holder still submits once.
    expect((await submit(proxy.url, second, '61')).status).toBe(200);
    expect(await transfersFor(stub.url, railClientRef(second.payoutId))).toHaveLength(1);
  });

  it('an admitted submission is one statement, then its outcome; a refused one is answered in a transaction that leaves only its answer', async () => {
    const p = newPayout();
    const admitted = await statementsDuring(async () => {
      expect((await submit(proxy.url, p, '40')).status).toBe(200);
    });
    // No BEGIN and COMMIT around the intent (docs/rail.md, "Admission in one round trip").
    expect(admitted).toEqual(['WITH reserved', 'WITH resolved']);

    const stale = newPayout(p.accountId);
    const received = (await stubStats(stub.url)).submitsReceived;
    const refused = await statementsDuring(async () => {
      const res = await submit(proxy.url, stale, '40');
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('FENCED_OUT');
    });
    expect(refused[0]).toBe('WITH reserved (error)');
    expect(refused.slice(1, 3)).toEqual(['START TRANSACTION', 'WITH reserved']);
    expect(refused.at(-1)).toBe('COMMIT');
    // The statement that raised wrote nothing: one scope, holding the answer; the rail saw nothing.
    expect(await idempotencyRows(db, keyOf(stale))).toBe(1);
    expect((await rowsOf(db, stale.payoutId)).map((r) => r.outcome)).toEqual(['FENCED']);
    expect(await highWater(db, p.accountId)).toBe('40');
    expect((await stubStats(stub.url)).submitsReceived).toBe(received);
  });

  it('the rail reference is derived from the payout id: any other one in the body is 400 and reaches nothing', async () => {
    const p = newPayout();
    const before = await stubStats(stub.url);
    const refused = {
      code: 'VALIDATION_FAILED',
      message: 'request validation failed',
      retrySafe: false,
      details: {
        fields: [
          {
            field: 'clientRef',
            message:
              'clientRef is derived from payoutId by the proxy (po-<payoutId, lower case>); omit it',
          },
        ],
      },
      traceId: TRACE,
    };
    const others: unknown[] = [
      'po-chosen-by-caller',
      railClientRef(randomUUID()), // another payout's reference
      `PO-${p.payoutId}`,
      railClientRef(p.payoutId).toUpperCase(),
      '',
      null,
      42,
    ];
    for (const clientRef of others) {
      const res = await submit(proxy.url, p, '9', { body: { ...p, clientRef } });
      expect({ clientRef, status: res.status, body: res.body }).toEqual({
        clientRef,
        status: 400,
        body: refused,
      });
    }
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
    expect(await rowsOf(db, p.payoutId)).toEqual([]);
    expect(await highWater(db, p.accountId)).toBeNull();
    expect(await idempotencyRows(db, keyOf(p))).toBe(0);

    // Naming exactly the derived reference is accepted (it changes nothing); the rail sees only it.
    const upper = { ...p, payoutId: p.payoutId.toUpperCase() };
    const ok = await submit(proxy.url, upper, '9', {
      key: keyOf(p),
      body: { ...upper, clientRef: railClientRef(p.payoutId) },
    });
    expect(ok.status).toBe(200);
    expect((await rowsOf(db, p.payoutId)).map((r) => r.client_ref)).toEqual([
      railClientRef(p.payoutId),
    ]);
    expect(await transfersFor(stub.url, railClientRef(p.payoutId))).toHaveLength(1);
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived + 1);
  });

  it('bad input is a 4xx envelope on every endpoint, never a 500, and changes nothing', async () => {
    const p = newPayout();
    const before = await stubStats(stub.url);
    const headers = {
      'x-fencing-token': '5',
      'x-owner-id': 'w',
      'x-idempotency-key': keyOf(p),
    };
    const post = (h: Record<string, string>, body?: unknown, rawBody?: string) =>
      http('POST', `${proxy.url}/v1/rail/submissions`, { headers: h, body, rawBody });
    const noToken = { ...headers } as Record<string, string>;
    delete noToken['x-fencing-token'];
    const noOwner = { ...headers } as Record<string, string>;
    delete noOwner['x-owner-id'];
    const noKey = { ...headers } as Record<string, string>;
    delete noKey['x-idempotency-key'];

    const cases: [string, Promise<{ status: number; body: any }>, number, string][] = [
      ['missing token', post(noToken, p), 400, 'INVALID_TOKEN'],
      ['token 0', post({ ...headers, 'x-fencing-token': '0' }, p), 400, 'INVALID_TOKEN'],
      ['token -1', post({ ...headers, 'x-fencing-token': '-1' }, p), 400, 'INVALID_TOKEN'],
      ['token abc', post({ ...headers, 'x-fencing-token': 'abc' }, p), 400, 'INVALID_TOKEN'],
      [
        'token overflow',
        post({ ...headers, 'x-fencing-token': '9223372036854775808' }, p),
        400,
        'INVALID_TOKEN',
      ],
      ['missing owner', post(noOwner, p), 400, 'VALIDATION_FAILED'],
      ['missing key', post(noKey, p), 400, 'VALIDATION_FAILED'],
      ['no body', post(headers), 400, 'VALIDATION_FAILED'],
      ['malformed json', post(headers, undefined, '{"payoutId":'), 400, 'VALIDATION_FAILED'],
      ['array body', post(headers, [p]), 400, 'VALIDATION_FAILED'],
      ['payoutId not uuid', post(headers, { ...p, payoutId: 'x' }), 400, 'VALIDATION_FAILED'],
      ['accountId charset', post(headers, { ...p, accountId: 'a b' }), 400, 'VALIDATION_FAILED'],
      [
        'accountId too long',
        post(headers, { ...p, accountId: 'a'.repeat(65) }),
        400,
        'VALIDATION_FAILED',
      ],
      ['amount zero', post(headers, { ...p, amountMinor: 0 }), 400, 'VALIDATION_FAILED'],
      ['amount fraction', post(headers, { ...p, amountMinor: 1.5 }), 400, 'VALIDATION_FAILED'],
      ['amount string', post(headers, { ...p, amountMinor: '100' }), 400, 'VALIDATION_FAILED'],
      [
        'amount unsafe',
        post(headers, undefined, JSON.stringify(p).replace('12345', '9007199254740993')),
        400,
        'VALIDATION_FAILED',
      ],
      ['currency', post(headers, { ...p, currency: 'eur' }), 400, 'VALIDATION_FAILED'],
      [
        'beneficiary missing',
        post(headers, { ...p, beneficiaryRef: undefined }),
        400,
        'VALIDATION_FAILED',
      ],
      ['unknown field', post(headers, { ...p, extra: 1 }), 400, 'VALIDATION_FAILED'],
      ['clientRef empty', post(headers, { ...p, clientRef: '' }), 400, 'VALIDATION_FAILED'],
      [
        'too large',
        post(headers, { ...p, beneficiaryRef: 'x'.repeat(70_000) }),
        413,
        'VALIDATION_FAILED',
      ],
      [
        'R2 not a uuid',
        http('GET', `${proxy.url}/v1/rail/submissions/nope`),
        400,
        'VALIDATION_FAILED',
      ],
      [
        'R2 unknown payout',
        http('GET', `${proxy.url}/v1/rail/submissions/${p.payoutId}`),
        404,
        'NOT_FOUND',
      ],
      ['unknown route', http('GET', `${proxy.url}/v1/rail`), 404, 'NOT_FOUND'],
      [
        'wrong method',
        http('DELETE', `${proxy.url}/v1/rail/submissions/${p.payoutId}`),
        404,
        'NOT_FOUND',
      ],
    ];
    for (const [name, pending, status, code] of cases) {
      const res = await pending;
      expect({ name, status: res.status, code: res.body?.code }).toEqual({ name, status, code });
      expect(res.body).toEqual(
        expect.objectContaining({ message: expect.any(String), retrySafe: false, traceId: TRACE }),
      );
    }
    expect(await rowsOf(db, p.payoutId)).toEqual([]);
    expect(await highWater(db, p.accountId)).toBeNull();
    expect(await idempotencyRows(db, keyOf(p))).toBe(0);
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
  });

  it('is ready when proxydb answers', async () => {
    const res = await http('GET', `${proxy.url}/health/ready`);
    expect(res.status).toBe(200);
    expect(res.body.info).toEqual({ proxydb: { status: 'up' } });
  });
});
