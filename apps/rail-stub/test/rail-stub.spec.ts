import { randomUUID } from 'node:crypto';
import { railClientRef } from '@dlock/payout-contract';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { http, sleep, spawnApp, type RunningApp, scratchDir } from '@dlock/testing';

const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
const TRACE = expect.stringMatching(/^[0-9a-f]{32}$/);

function pay(url: string, clientRef: string, amountMinor = 500) {
  return http('POST', `${url}/submit`, { body: { clientRef, amountMinor, currency: 'EUR' } });
}

async function faults(url: string, patch: Record<string, unknown>) {
  const res = await http('POST', `${url}/admin/faults`, { body: patch });
  expect(res.status).toBe(200);
  return res.body;
}

/** A raw fetch that reports how the connection ended instead of throwing. */
async function attempt(
  url: string,
  clientRef: string,
): Promise<{ status: number | 'dropped'; ms: number }> {
  const started = Date.now();
  try {
    const res = await pay(url, clientRef);
    return { status: res.status, ms: Date.now() - started };
  } catch {
    return { status: 'dropped', ms: Date.now() - started };
  }
}

describe('rail-stub: the hostile, memoryless, non-idempotent rail', () => {
  const journal = path.join(scratchDir('rail-stub-'), 'journal.jsonl');
  const env = {
    RAIL_STUB_JOURNAL_PATH: journal,
    RAIL_STUB_SETTLEMENT_WINDOW_MS: '800',
    RAIL_STUB_HOLD_MS: '700',
  };
  let stub: RunningApp;

  beforeAll(async () => {
    stub = await spawnApp('rail-stub', env);
  });
  afterAll(() => stub?.stop());

  it('pays twice on a repeated clientRef: every call is a fresh transfer (FR-21)', async () => {
    const ref = railClientRef(randomUUID());
    const first = await pay(stub.url, ref);
    const second = await pay(stub.url, ref);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ railReference: expect.stringMatching(/^rr-/), acceptedAt: ISO });
    expect(second.status).toBe(200);
    expect(second.body.railReference).not.toBe(first.body.railReference);

    const lookup = await http('GET', `${stub.url}/lookup?clientRef=${ref}`);
    expect(lookup.status).toBe(200);
    expect(lookup.body).toEqual({
      clientRef: ref,
      asOf: ISO,
      settlementWindowMs: 800,
      transfers: [first.body, second.body].map((ack) => ({
        railReference: ack.railReference,
        clientRef: ref,
        amountMinor: 500,
        currency: 'EUR',
        acceptedAt: ack.acceptedAt,
        settled: false,
        settledAt: null,
        duplicateOf: null,
      })),
    });
    await sleep(850);
    const settled = await http('GET', `${stub.url}/lookup?clientRef=${ref}`);
    for (const t of settled.body.transfers) {
      expect(t.settled).toBe(true);
      expect(Date.parse(t.settledAt) - Date.parse(t.acceptedAt)).toBe(800);
    }
    const unknown = await http('GET', `${stub.url}/lookup?clientRef=po-never-seen`);
    expect(unknown.body.transfers).toEqual([]);
  });

  it('injects declines, 5xx, resets, held-then-dropped connections, malformed and duplicate acks', async () => {
    const before = (await http('GET', `${stub.url}/admin/stats`)).body;
    await faults(stub.url, {
      script: ['decline', 'error', 'reset', 'hold-accepted', 'ack-malformed', 'ack-duplicate'],
    });
    const refs = Array.from({ length: 6 }, () => railClientRef(randomUUID()));

    const declined = await pay(stub.url, refs[0]);
    expect(declined.status).toBe(402);
    const error = await pay(stub.url, refs[1]);
    expect(error.status).toBe(500);
    expect((await attempt(stub.url, refs[2])).status).toBe('dropped');
    const held = await attempt(stub.url, refs[3]);
    expect(held.status).toBe('dropped');
    expect(held.ms).toBeGreaterThanOrEqual(650); // really held for RAIL_STUB_HOLD_MS
    const malformed = await pay(stub.url, refs[4]);
    expect(malformed.status).toBe(200);
    expect(malformed.text).toBe('OK');
    const duplicated = await pay(stub.url, refs[5]);
    expect(duplicated.status).toBe(200);

    const count = async (ref: string) =>
      (await http('GET', `${stub.url}/lookup?clientRef=${ref}`)).body.transfers as {
        railReference: string;
        duplicateOf: string | null;
      }[];
    expect(await count(refs[0])).toHaveLength(0);
    expect(await count(refs[1])).toHaveLength(0);
    expect(await count(refs[2])).toHaveLength(0);
    expect(await count(refs[3])).toHaveLength(1); // money moved although the caller heard nothing
    expect(await count(refs[4])).toHaveLength(1);
    const twice = await count(refs[5]);
    expect(twice).toHaveLength(2);
    expect(twice[0].railReference).toBe(duplicated.body.railReference);
    expect(twice[1].duplicateOf).toBe(duplicated.body.railReference);

    const after = (await http('GET', `${stub.url}/admin/stats`)).body;
    expect(after.submitsReceived - before.submitsReceived).toBe(6);
    expect(after.transfersAccepted - before.transfersAccepted).toBe(4);
    expect(after.declined - before.declined).toBe(1);
    expect(after.duplicateAcks - before.duplicateAcks).toBe(1);
    expect(after.failures).toEqual({
      error: before.failures.error + 1,
      reset: before.failures.reset + 1,
      hold: before.failures.hold + 1,
    });
  });

  it('answers a scripted 4xx (400, 402, 409, 429), booking the transfer or not as scripted', async () => {
    const before = (await http('GET', `${stub.url}/admin/stats`)).body;
    const script = [
      'reject-400',
      'reject-400-accepted',
      'decline-accepted',
      'reject-409',
      'reject-409-accepted',
      'reject-429',
      'reject-429-accepted',
    ];
    await faults(stub.url, { script });
    const answers = [];
    for (const fate of script) {
      const ref = `po-${randomUUID()}`;
      const res = await pay(stub.url, ref);
      const booked = (await http('GET', `${stub.url}/lookup?clientRef=${ref}`)).body.transfers;
      answers.push({ fate, status: res.status, body: res.body, booked: booked.length });
    }
    const answer = (fate: string, status: number, word: string, booked: number) => ({
      fate,
      status,
      body: { status: word, clientRef: expect.stringMatching(/^po-/) },
      booked,
    });
    expect(answers).toEqual([
      answer('reject-400', 400, 'INVALID', 0),
      answer('reject-400-accepted', 400, 'INVALID', 1),
      answer('decline-accepted', 402, 'DECLINED', 1),
      answer('reject-409', 409, 'CONFLICT', 0),
      answer('reject-409-accepted', 409, 'CONFLICT', 1),
      answer('reject-429', 429, 'RATE_LIMITED', 0),
      answer('reject-429-accepted', 429, 'RATE_LIMITED', 1),
    ]);
    const after = (await http('GET', `${stub.url}/admin/stats`)).body;
    expect(after.rejected - before.rejected).toBe(7);
    expect(after.rejectsAccepted - before.rejectsAccepted).toBe(4);
    expect(after.transfersAccepted - before.transfersAccepted).toBe(4);
  });

  it('replays the same fault sequence for the same seed', async () => {
    const settings = { failureRate: 0.4, failureMode: 'error', declineRate: 0.3, script: [] };
    const run = async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await pay(stub.url, `po-seed-${i}`)).status);
      return statuses;
    };
    await faults(stub.url, { ...settings, seed: 4242 });
    const first = await run();
    await faults(stub.url, { seed: 4242 });
    expect(await run()).toEqual(first);
    expect(new Set(first).size).toBeGreaterThan(1);
    const shown = await faults(stub.url, { failureRate: 0, declineRate: 0 });
    expect(shown).toEqual({
      latencyMs: 0,
      failureRate: 0,
      failureMode: 'error',
      failureAcceptRate: 0.5,
      holdMs: 700,
      declineRate: 0,
      duplicateAckRate: 0,
      slowRate: 0,
      slowLatencyMs: 5000,
      seed: 4242,
      script: [],
    });
  });

  it('serves its OpenAPI document: the committed docs/openapi/rail-stub.json', async () => {
    const res = await http('GET', `${stub.url}/openapi.json`);
    const file = path.join(__dirname, '..', '..', '..', 'docs', 'openapi', 'rail-stub.json');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual(JSON.parse(readFileSync(file, 'utf8')));
  });

  it('latency delays the answer but the transfer is booked on receipt', async () => {
    await faults(stub.url, { latencyMs: 300 });
    const ref = railClientRef(randomUUID());
    const pending = attempt(stub.url, ref);
    await sleep(100);
    const midway = await http('GET', `${stub.url}/lookup?clientRef=${ref}`);
    expect(midway.body.transfers).toHaveLength(1);
    const done = await pending;
    expect(done.status).toBe(200);
    expect(done.ms).toBeGreaterThanOrEqual(280);
    await faults(stub.url, { latencyMs: 0 });
  });

  it('a slow call answers after the slow latency, the rest stay fast, the same calls for the same seed', async () => {
    const slowCalls = async () => (await http('GET', `${stub.url}/admin/stats`)).body.slowCalls;
    // Which of ten calls were slow, by the stub's own counter (timing alone is noisy here).
    const pattern = async () => {
      const slow: boolean[] = [];
      for (let i = 0; i < 10; i++) {
        const before = await slowCalls();
        expect((await pay(stub.url, railClientRef(randomUUID()))).status).toBe(200);
        slow.push((await slowCalls()) > before);
      }
      return slow;
    };
    const quiet = { failureRate: 0, declineRate: 0, duplicateAckRate: 0, latencyMs: 0, script: [] };

    await faults(stub.url, { ...quiet, slowRate: 0, slowLatencyMs: 600 });
    expect(await pattern()).not.toContain(true);

    await faults(stub.url, { slowRate: 1 });
    const ref = railClientRef(randomUUID());
    const pending = attempt(stub.url, ref);
    await sleep(150);
    // Money moved on arrival; only the answer is late.
    const midway = await http('GET', `${stub.url}/lookup?clientRef=${ref}`);
    expect(midway.body.transfers).toHaveLength(1);
    const done = await pending;
    expect(done.status).toBe(200);
    expect(done.ms).toBeGreaterThanOrEqual(580);

    await faults(stub.url, { slowRate: 0.5, slowLatencyMs: 200, seed: 99 });
    const first = await pattern();
    expect(new Set(first).size).toBe(2);
    await faults(stub.url, { seed: 99 });
    expect(await pattern()).toEqual(first);
    await faults(stub.url, { slowRate: 0, slowLatencyMs: 5000 });
  });

  it('bad input is a 400 envelope, never a 500, and books nothing', async () => {
    const before = (await http('GET', `${stub.url}/admin/stats`)).body;
    const cases: [string, Promise<{ status: number; body: any }>][] = [
      ['no body', http('POST', `${stub.url}/submit`)],
      ['malformed', http('POST', `${stub.url}/submit`, { rawBody: '{"clientRef":' })],
      [
        'missing clientRef',
        http('POST', `${stub.url}/submit`, { body: { amountMinor: 1, currency: 'EUR' } }),
      ],
      [
        'amount 0',
        http('POST', `${stub.url}/submit`, {
          body: { clientRef: 'x', amountMinor: 0, currency: 'EUR' },
        }),
      ],
      [
        'amount text',
        http('POST', `${stub.url}/submit`, {
          body: { clientRef: 'x', amountMinor: '5', currency: 'EUR' },
        }),
      ],
      [
        'currency',
        http('POST', `${stub.url}/submit`, {
          body: { clientRef: 'x', amountMinor: 5, currency: 'euro' },
        }),
      ],
      [
        'extra field',
        http('POST', `${stub.url}/submit`, {
          body: { clientRef: 'x', amountMinor: 5, currency: 'EUR', token: '1' },
        }),
      ],
      ['lookup without ref', http('GET', `${stub.url}/lookup`)],
      ['lookup twice', http('GET', `${stub.url}/lookup?clientRef=a&clientRef=b`)],
      ['faults rate > 1', http('POST', `${stub.url}/admin/faults`, { body: { failureRate: 1.5 } })],
      [
        'faults mode',
        http('POST', `${stub.url}/admin/faults`, { body: { failureMode: 'explode' } }),
      ],
      [
        'faults script',
        http('POST', `${stub.url}/admin/faults`, { body: { script: ['ack', 'boom'] } }),
      ],
      ['faults seed', http('POST', `${stub.url}/admin/faults`, { body: { seed: -1 } })],
      ['faults slow rate', http('POST', `${stub.url}/admin/faults`, { body: { slowRate: 2 } })],
      [
        'faults slow latency',
        http('POST', `${stub.url}/admin/faults`, { body: { slowLatencyMs: 600_001 } }),
      ],
    ];
    for (const [name, pending] of cases) {
      const res = await pending;
      expect({ name, status: res.status, code: res.body?.code }).toEqual({
        name,
        status: 400,
        code: 'VALIDATION_FAILED',
      });
      expect(res.body.traceId).toEqual(TRACE);
    }
    const unknown = await http('GET', `${stub.url}/v1/submit`);
    expect(unknown.status).toBe(404);
    const after = (await http('GET', `${stub.url}/admin/stats`)).body;
    expect(after.submitsReceived).toBe(before.submitsReceived);
    expect(after.journalTransfers).toBe(before.journalTransfers);
  });

  it('the journal survives a SIGKILL and a restart, torn last line included', async () => {
    const ref = railClientRef(randomUUID());
    const ack = await pay(stub.url, ref);
    const total = (await http('GET', `${stub.url}/admin/stats`)).body.journalTransfers;
    await stub.kill();
    // Simulate a crash mid-append: a partial record at the end of the file.
    const fs = await import('node:fs');
    fs.appendFileSync(journal, '{"railReference":"rr-torn","clientRef":');
    stub = await spawnApp('rail-stub', env);
    const lookup = await http('GET', `${stub.url}/lookup?clientRef=${ref}`);
    expect(lookup.body.transfers.map((t: { railReference: string }) => t.railReference)).toEqual([
      ack.body.railReference,
    ]);
    const stats = (await http('GET', `${stub.url}/admin/stats`)).body;
    expect(stats.journalTransfers).toBe(total);
    expect(stats.submitsReceived).toBe(0);
    // Appends after the torn line land on their own line and are readable.
    const again = await pay(stub.url, ref);
    expect(again.status).toBe(200);
    const lines = readFileSync(journal, 'utf8').trimEnd().split('\n');
    expect(JSON.parse(lines[lines.length - 1]).railReference).toBe(again.body.railReference);
  });
});
