import { withTestToken } from '@dlock/testing';

/** A small JSON-over-HTTP helper with a deadline on every call. */
export interface HttpResult {
  status: number;
  // Other services' JSON, read loosely by scenarios; the checkers read the databases instead.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  text: string;
}

export async function httpJson(
  method: string,
  url: string,
  opts: { headers?: Record<string, string>; body?: unknown; timeoutMs?: number } = {},
): Promise<HttpResult> {
  // The token of the X-Owner-Id it acts as (else the operator's), for an app this harness started.
  const headers = await withTestToken(url, { ...opts.headers }, opts.body);
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body, (_k, v: unknown) =>
      typeof v === 'bigint' ? v.toString() : v,
    );
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(url, {
    method,
    headers,
    body,
    signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
  });
  const text = await res.text();
  let parsed: unknown = undefined;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  return { status: res.status, body: parsed, text };
}

/** Prometheus text exposition → sum of the samples of `name` whose labels include `labels`. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+([^\s]+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got: Record<string, string> = {};
    for (const pair of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      got[pair[1]] = pair[2];
    }
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) total += Number(m[4]);
  }
  return total;
}

export async function scrape(baseUrl: string): Promise<string> {
  try {
    const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(3_000) });
    return res.ok ? await res.text() : '';
  } catch {
    return '';
  }
}
