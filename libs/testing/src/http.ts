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
  options: { headers?: Record<string, string>; body?: unknown; rawBody?: string } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...options.headers };
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
