/**
 * Outbound HTTP transport benchmark: the candidates for the one
 * service-to-service client (libs/http-client), each sending the same small
 * JSON POST to a local node:http server on 127.0.0.1 that answers a small
 * JSON body, as the payout hops do.
 *
 *   npm run build && npm run bench:http-client       # writes bench/reports/http-client.md
 *   BENCH_DURATION_MS=1000 npm run bench:http-client  # shorter rows
 *
 * The server runs in a child process, so the CPU columns are the client's
 * alone (process.cpuUsage over the row, warm-up excluded). Every row is
 * bounded by a request count and a duration, whichever comes first.
 * Text after the NOTES_MARKER line of an existing report is kept on rewrite.
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent as UndiciAgent, request as undiciRequest } from 'undici';
import { HttpTransport, JsonPeer } from '../../libs/http-client/src';
import { loadGate, reportWithLoad } from '../load-gate';
import { writeKeepingNotes } from '../report-notes';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3_000);
const REQUESTS_MAX = Number(process.env.BENCH_REQUESTS ?? 30_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const WARMUP_MS = 300;
const CONCURRENCIES = [1, 16];
const BODY = JSON.stringify({
  payoutId: '0b5e1c1e-8a3c-4c8e-9a51-3d1a2b4c5d6e',
  accountId: 'acct-000123',
  amountMinor: 12_345,
  currency: 'EUR',
  beneficiaryRef: 'ben-42',
});
const REPLY = JSON.stringify({
  submissionId: 'c8d4b6a2-1f3e-4a5b-9c7d-0e1f2a3b4c5d',
  railReference: 'rail-7f3a9c',
  presentedToken: '9007199254740993',
  outcome: 'ACKED',
});
const HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  accept: 'application/json',
  'x-request-deadline-ms': '3000',
};

/** Resolves to the answer's text, or (the JsonPeer row) to its parsed body. */
type Send = () => Promise<unknown>;
interface Candidate {
  name: string;
  make: (url: URL, sockets: number) => { send: Send; close: () => Promise<void> };
}

const candidates: Candidate[] = [
  {
    name: 'node:http, keep-alive Agent',
    make: (url, sockets) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: sockets, timeout: 4_000 });
      const send: Send = () =>
        new Promise((resolve, reject) => {
          const req = http.request(url, {
            method: 'POST',
            agent,
            headers: { ...HEADERS, 'content-length': String(Buffer.byteLength(BODY)) },
          });
          req.on('error', reject);
          req.on('response', (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
            res.on('error', reject);
          });
          req.end(BODY);
        });
      return { send, close: async () => agent.destroy() };
    },
  },
  {
    name: 'fetch (Node 20 built-in, undici inside)',
    make: (url) => ({
      send: async () => {
        const res = await fetch(url, { method: 'POST', headers: HEADERS, body: BODY });
        return res.text();
      },
      close: async () => undefined,
    }),
  },
  {
    name: 'undici 7 request(), own Agent',
    make: (url, sockets) => {
      const dispatcher = new UndiciAgent({ connections: sockets, keepAliveTimeout: 4_000 });
      return {
        send: async () => {
          const res = await undiciRequest(url, {
            method: 'POST',
            headers: HEADERS,
            body: BODY,
            dispatcher,
          });
          return res.body.text();
        },
        close: () => dispatcher.close(),
      };
    },
  },
  {
    name: '@dlock/http-client HttpTransport (the chosen layer, text)',
    make: (url) => {
      const transport = new HttpTransport({ peer: 'bench' });
      return {
        send: async () =>
          (
            await transport.send({
              method: 'POST',
              url,
              headers: { ...HEADERS, 'content-length': String(Buffer.byteLength(BODY)) },
              body: BODY,
              connectTimeoutMs: 500,
              readTimeoutMs: 3_000,
            })
          ).text,
        close: async () => transport.close(),
      };
    },
  },
  {
    name: '@dlock/http-client JsonPeer (the layer + int64-safe JSON both ways)',
    make: (url) => {
      const peer = new JsonPeer('bench', url.origin);
      const body: unknown = JSON.parse(BODY);
      return {
        send: () =>
          peer.call({
            method: 'POST',
            path: url.pathname,
            body,
            budget: { connectTimeoutMs: 500, readTimeoutMs: 3_000 },
          }),
        close: async () => peer.close(),
      };
    },
  },
];

interface Row {
  name: string;
  round: number;
  concurrency: number;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  load: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function measure(c: Candidate, url: URL, concurrency: number, round: number): Promise<Row> {
  const client = c.make(url, concurrency);
  const latencies: number[] = [];
  let issued = 0;
  let measuring = false;
  const worker = async (until: number) => {
    while (performance.now() < until && (!measuring || issued < REQUESTS_MAX)) {
      if (measuring) issued++;
      const started = performance.now();
      const answer = await client.send();
      if (typeof answer === 'string' ? answer.length !== REPLY.length : !answer)
        throw new Error(`${c.name}: short reply`);
      if (measuring) latencies.push(performance.now() - started);
    }
  };
  const workers = (until: number) =>
    Promise.all(Array.from({ length: concurrency }, () => worker(until)));
  await workers(performance.now() + WARMUP_MS);
  measuring = true;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await workers(started + DURATION_MS);
  const elapsedMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  await client.close();
  latencies.sort((a, b) => a - b);
  return {
    name: c.name,
    round,
    concurrency,
    requests: latencies.length,
    rps: Math.round((latencies.length / elapsedMs) * 1000),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cpuUsPerReq: (used.user + used.system) / latencies.length,
    load: os.loadavg()[0],
  };
}

function serve(): void {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(REPLY)),
      });
      res.end(REPLY);
    });
  });
  server.listen(0, '127.0.0.1', () =>
    process.send!({ port: (server.address() as AddressInfo).port }),
  );
}

async function startServer(): Promise<{ child: ChildProcess; url: URL }> {
  const child = fork(__filename, ['serve'], { stdio: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', () => reject(new Error('bench server exited')));
  });
  return { child, url: new URL(`http://127.0.0.1:${port}/v1/rail/submissions`) };
}

function report(rows: Row[], wallS: number): string {
  const cpus = os.cpus();
  const lines = [
    '# Outbound HTTP client benchmark',
    '',
    'The same small JSON POST (≈170 B body, ≈170 B JSON answer) from one Node process',
    'to a node:http server in a child process on 127.0.0.1, through each candidate',
    'transport with kept-alive connections (as many as the concurrency). Latencies in',
    `milliseconds measured by the client; each row ${DURATION_MS} ms or ${REQUESTS_MAX}`,
    `requests, whichever first, after ${WARMUP_MS} ms warm-up; rows alternate by round.`,
    '',
    '- command: `npm run build && npm run bench:http-client`',
    `- machine: ${cpus.length} CPUs (${cpus[0]?.model.trim()}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, Node ${process.version}, ${os.platform()} ${os.release()}`,
    '- load column: the 1-min load average at the end of the row',
    '- client CPU: user+system µs of the bench process per request (the server is another process)',
    `- total wall time: ${wallS.toFixed(0)} s`,
    '',
    '| transport | round | concurrency | requests | req/s | p50 ms | p99 ms | client CPU µs/req | load |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.round} | ${r.concurrency} | ${r.requests} | ${r.rps} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.cpuUsPerReq.toFixed(0)} | ${r.load.toFixed(1)} |`,
    ),
    '',
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  // Refuses to measure a busy machine (bench/load-gate.ts).
  const gate = loadGate('bench:http-client');
  const started = performance.now();
  const { child, url } = await startServer();
  const rows: Row[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? candidates : [...candidates].reverse();
      for (const concurrency of CONCURRENCIES) {
        for (const c of order) {
          const row = await measure(c, url, concurrency, round);
          console.log(JSON.stringify(row));
          rows.push(row);
        }
      }
    }
  } finally {
    child.kill();
  }
  const text = report(rows, (performance.now() - started) / 1000);
  const out = path.join(ROOT, 'bench', 'reports', 'http-client.md');
  writeKeepingNotes(out, reportWithLoad(gate, text));
  console.log(`[bench] wrote ${out}`);
}

if (process.argv[2] === 'serve') serve();
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
