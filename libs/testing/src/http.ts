import { audienceOf, testBearer, TEST_OPERATOR } from './identity';
import { withTestProofs } from './proofs';

/** A tiny fetch wrapper for tests: status, headers and the parsed JSON body. */
export interface HttpResult {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export async function http(
  method: string,
  url: string,
  options: {
    headers?: Record<string, string>;
    body?: unknown;
    rawBody?: string;
    /** Send no Authorization header (http() otherwise adds one: see withTestToken). */
    noAuth?: boolean;
    /** Send no grant proof or instruction (http() otherwise adds them: see withTestProofs). */
    noProof?: boolean;
  } = {},
): Promise<HttpResult> {
  const authorised: Record<string, string> = options.noAuth
    ? { ...options.headers }
    : await withTestToken(url, { ...options.headers }, options.body);
  const headers = options.noProof
    ? authorised
    : await withTestProofs(method, url, authorised, options.body);
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body, (_k, v: unknown) =>
      typeof v === 'bigint' ? v.toString() : v,
    );
  }
  if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/**
 * Adds `Authorization: Bearer` for a request to an app the tests started
 * (registerAudience), unless the test set one itself: the subject is the
 * owner the request acts as (X-Owner-Id, else the body's ownerId: it must be
 * the caller's identity), else the test operator.
 */
export async function withTestToken(
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Record<string, string>> {
  const names = Object.keys(headers).map((h) => h.toLowerCase());
  const audience = audienceOf(url);
  if (audience === undefined || names.includes('authorization')) return headers;
  const ownerHeader = Object.keys(headers).find((h) => h.toLowerCase() === 'x-owner-id');
  const bodyOwner = (body as { ownerId?: unknown } | undefined)?.ownerId;
  const subject = ownerHeader
    ? headers[ownerHeader]
    : typeof bodyOwner === 'string' && bodyOwner !== ''
      ? bodyOwner
      : TEST_OPERATOR;
  return { ...headers, authorization: await testBearer(subject, audience) };
}
