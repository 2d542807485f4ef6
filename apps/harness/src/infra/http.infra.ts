import { withTestToken } from '@dlock/testing';
import { DlockError, type ErrorCode } from '@dlock/lock-api';
import {
  HttpTransport,
  JsonPeer,
  PeerProtocolError,
  PeerUnavailableError,
  type CallBudget,
  type PeerCall,
} from '@dlock/http-client';

/** The harness waits longer than a worker would: a slow answer is evidence, not a fault. */
export const HARNESS_BUDGET: CallBudget = Object.freeze({
  connectTimeoutMs: 1_000,
  readTimeoutMs: 10_000,
});

/**
 * One JSON call over @dlock/http-client to a surface the payout contract has
 * no client for (the lock-server's L7/L8, the rail-stub's admin routes). A
 * refusal comes back as its typed DlockError.
 */
export async function callOnce<T>(
  peer: string,
  baseUrl: string,
  call: Omit<PeerCall, 'budget'>,
): Promise<T> {
  const hop = new JsonPeer(peer, baseUrl);
  // The token of the owner it acts as (else the operator's), for an app this harness started.
  const headers = await withTestToken(baseUrl, { ...call.headers }, call.body);
  try {
    return await hop.call<T>({ ...call, headers, budget: HARNESS_BUDGET });
  } finally {
    hop.close();
  }
}

/** A call as a scenario records it: the 2xx body, or the status and code of the refusal. */
export type Answer<T> =
  | { status: 200; body: T; code?: undefined }
  | { status: number; code: ErrorCode; body?: undefined };

/** Waits for `call`; a contract refusal is an answer, a transport or protocol failure is thrown. */
export async function answerOf<T>(call: Promise<T>): Promise<Answer<T>> {
  try {
    return { status: 200, body: await call };
  } catch (err) {
    if (
      err instanceof DlockError &&
      !(err instanceof PeerUnavailableError) &&
      !(err instanceof PeerProtocolError)
    ) {
      return { status: err.httpStatus, code: err.code };
    }
    throw err;
  }
}

/** A service's /metrics text; '' when it does not answer (the scenario reads a zero). */
export async function scrape(baseUrl: string): Promise<string> {
  const transport = new HttpTransport({ peer: 'metrics' });
  try {
    const res = await transport.send({
      method: 'GET',
      url: new URL('/metrics', baseUrl),
      headers: {},
      connectTimeoutMs: 1_000,
      readTimeoutMs: 3_000,
    });
    return res.status === 200 ? res.text : '';
  } catch {
    return '';
  } finally {
    transport.close();
  }
}
