/**
 * The requests the stack bench sends to each service: what the executor (and
 * for the rail stub, the rail-proxy) sends per payout, through the same typed
 * clients (@dlock/payout-contract, the SDK's wire calls), so headers and
 * bodies are the real ones. Each batch uses fresh payouts, keys or
 * references; its phases run one route each, one request at a time.
 */
import { randomUUID } from 'node:crypto';
import { HOP_BUDGETS, HttpTransport, JsonPeer } from '../../libs/http-client/src';
import { LockServerApi } from '../../libs/lock-client/src/wire';
import { payoutLockKey, railClientRef } from '../../libs/payout-contract/src/payout-protocol';
import { PaymentResourceClient } from '../../libs/payout-contract/src/payment-resource.client';
import { RailProxyClient } from '../../libs/payout-contract/src/rail-proxy.client';
import { testTokenProvider } from '../../libs/testing/src/identity';
import { testGrantProof, testInstruction, testRailReceipt } from '../../libs/testing/src/proofs';
import { withClient } from '../../libs/testing/src/postgres';

/** One route, `requests` requests per iteration. */
export interface Phase {
  name: string;
  run(): Promise<void>;
}

/** A batch of `n` iterations: its phases run in order, each over the whole batch. */
export type Batch = (n: number) => Promise<Phase[]>;

const OWNER = 'bench-worker';
/** Above every fence and high-water mark this bench's databases start with. */
let nextToken = 1_000n;
const token = () => ++nextToken;

/** POST /submit as the rail-proxy sends it (kept alive here: the stack, not TCP set-up, is measured). */
export function railStubBatch(url: string): Batch {
  const peer = new JsonPeer('rail-stub', url);
  return async (n) => [
    {
      name: 'submit',
      run: async () => {
        for (let i = 0; i < n; i++) {
          await peer.call({
            method: 'POST',
            path: '/submit',
            body: { clientRef: `po-${randomUUID()}`, amountMinor: 100, currency: 'EUR' },
            budget: HOP_BUDGETS.fencedWrite,
          });
        }
      },
    },
  ];
}

/** L4 acquire then L6 release of `n` keys, on a session opened for the batch, as the SDK sends them. */
export function lockServerBatch(url: string): Batch {
  const transport = new HttpTransport({
    peer: 'lock-server',
    token: testTokenProvider(OWNER, 'lock-server'),
  });
  const api = new LockServerApi(new URL(url), OWNER, transport.send);
  const call = { budget: HOP_BUDGETS.fencedWrite };
  return async (n) => {
    const { sessionId } = await api.openSession(60_000, call);
    const keys = Array.from({ length: n }, () => `payout:bench-${randomUUID()}`);
    const grants: { token: bigint; proof: string }[] = [];
    return [
      {
        name: 'acquire',
        run: async () => {
          for (const key of keys) {
            const g = await api.acquire(key, { sessionId, ttlMillis: 30_000, waitMillis: 0 }, call);
            grants.push({ token: g.fencingToken, proof: g.proof });
          }
        },
      },
      {
        name: 'release',
        run: async () => {
          for (let i = 0; i < n; i++) await api.release(keys[i], sessionId, grants[i], call);
        },
      },
    ];
  };
}

/** Funded accounts, one PENDING payout each (one grant per account, as one lock per account). */
async function seedPayouts(
  paydb: string,
  n: number,
): Promise<{ payoutId: string; accountId: string }[]> {
  const rows = Array.from({ length: n }, () => ({
    payoutId: randomUUID(),
    accountId: `bench-${randomUUID().slice(0, 13)}`,
  }));
  await withClient(paydb, async (c) => {
    const ids = rows.map((r) => r.accountId);
    await c.query(
      `INSERT INTO account (account_id, kind, currency, balance_minor)
       SELECT a, 'CUSTOMER', 'EUR', 1000000000 FROM unnest($1::text[]) AS t(a)`,
      [ids],
    );
    await c.query(
      `INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
       SELECT p, a, 100, 'EUR', 'ben-' || left(p::text, 8), 'po-' || p::text
         FROM unnest($1::uuid[], $2::text[]) AS t(p, a)`,
      [rows.map((r) => r.payoutId), ids],
    );
  });
  return rows;
}

/** P2 claim, P6 SUBMITTED, P6 ACKED, P3 post of `n` payouts, as the executor sends them. */
export function paymentResourceBatch(url: string, paydb: string): Batch {
  const client = new PaymentResourceClient(
    url,
    OWNER,
    testTokenProvider(OWNER, 'payment-resource'),
  );
  return async (n) => {
    const payouts = (await seedPayouts(paydb, n)).map((p) => {
      const t = token();
      const proof = testGrantProof({ key: payoutLockKey(p.accountId), token: t, owner: OWNER });
      const submissionId = randomUUID();
      const railReference = `rr-${submissionId}`;
      const submission = {
        ...p,
        submissionId,
        amountMinor: 100,
        currency: 'EUR',
        beneficiaryRef: `ben-${p.payoutId.slice(0, 8)}`,
        presentedToken: t,
        ownerId: OWNER,
      };
      // What the proxy would have answered the submit with (docs/rail.md, "Receipts").
      const railReceipt = testRailReceipt(p.payoutId, submission, {
        out: 'ACKED',
        ref: railReference,
      });
      return {
        ...p,
        fence: { token: t, proof },
        ack: { submissionId, railReference, railReceipt },
      };
    });
    const each = (
      name: string,
      step: (p: (typeof payouts)[number]) => Promise<unknown>,
    ): Phase => ({
      name,
      run: async () => {
        for (const p of payouts) await step(p);
      },
    });
    return [
      each('claim', (p) => client.claim(p.payoutId, p.fence, 'PENDING')),
      each('rail-outcome SUBMITTED', (p) => client.markSubmitted(p.payoutId, p.fence)),
      each('rail-outcome ACKED', (p) =>
        client.railOutcome(p.payoutId, p.fence, { outcome: 'ACKED', ...p.ack }),
      ),
      each('post', (p) => client.post(p.payoutId, p.fence, p.ack)),
    ];
  };
}

/** R1 submit of `n` payouts over 64 accounts, with the grant proof and the signed instruction. */
export function railProxyBatch(url: string): Batch {
  const client = new RailProxyClient(
    url,
    OWNER,
    { connectTimeoutMs: 500, readTimeoutMs: 10_000 },
    testTokenProvider(OWNER, 'rail-proxy'),
  );
  const accounts = Array.from({ length: 64 }, (_, i) => `bench-proxy-${i}`);
  return async (n) => {
    const submissions = Array.from({ length: n }, (_, i) => {
      const payoutId = randomUUID();
      const accountId = accounts[i % accounts.length];
      const t = token();
      const payout = {
        payoutId,
        accountId,
        amountMinor: 100,
        currency: 'EUR',
        beneficiaryRef: `ben-${payoutId.slice(0, 8)}`,
      };
      const proof = testGrantProof({ key: payoutLockKey(accountId), token: t, owner: OWNER });
      return { payout, fence: { token: t, proof }, instruction: testInstruction(payout, t, OWNER) };
    });
    return [
      {
        name: 'submit',
        run: async () => {
          for (const s of submissions) await client.submit(s.fence, s.instruction, s.payout);
        },
      },
    ];
  };
}

/** The framework floor (floor.ts): the rail stub's request against a bare server. */
export function floorBatch(url: string): Batch {
  return railStubBatch(url);
}

export { railClientRef };
