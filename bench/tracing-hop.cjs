// One hop's both sides in one process: CPU µs per request, by propagation mode (bench/reports/tracing.md).
// Run from the repo root after `node scripts/build.js`: node bench/tracing-hop.cjs none|manual|instr
const mode = process.argv[2];
const N = 20000,
  CONC = 16;
const root = process.cwd();
const req = (m) => require(require.resolve(m, { paths: [root] }));
const { W3CTraceContextPropagator } = req('@opentelemetry/core');
const { AlwaysOffSampler } = req('@opentelemetry/sdk-trace-base');
const { NodeTracerProvider } = req('@opentelemetry/sdk-trace-node');
let prop = { runInRequestTrace: (h, e, n) => n(), withTraceHeaders: (h) => h };
if (mode !== 'none') {
  new NodeTracerProvider({ sampler: new AlwaysOffSampler() }).register({
    propagator: new W3CTraceContextPropagator(),
  });
}
if (mode === 'instr') {
  const { HttpInstrumentation } = req('@opentelemetry/instrumentation-http');
  new HttpInstrumentation({ ignoreIncomingRequestHook: (r) => /^\/health/.test(r.url) });
}
if (mode === 'manual') {
  prop = require(root + '/dist/libs/tracing/src/propagation.js');
  prop.setManualPropagation(true);
}
const http = require('node:http');
const server = http.createServer((rq, rs) =>
  prop.runInRequestTrace(rq.headers, [rq, rs], () => {
    rq.on('data', () => {});
    rq.on('end', () => {
      rs.setHeader('content-type', 'application/json');
      rs.end('{"ok":true}');
    });
  }),
);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
server.listen(0, '127.0.0.1', async () => {
  const port = server.address().port;
  const one = () =>
    new Promise((resolve, reject) => {
      const r = http.request({
        host: '127.0.0.1',
        port,
        path: '/v1/x',
        method: 'POST',
        agent,
        headers: prop.withTraceHeaders({
          'content-type': 'application/json',
          'x-request-deadline-ms': '5000',
        }),
      });
      r.on('response', (res) => {
        res.on('data', () => {});
        res.on('end', resolve);
      });
      r.on('error', reject);
      r.end('{"a":1}');
    });
  const run = async (n) => {
    let i = 0;
    await Promise.all(
      Array.from({ length: CONC }, async () => {
        while (i++ < n) await one();
      }),
    );
  };
  await run(2000); // warm-up
  const c0 = process.cpuUsage();
  await run(N);
  const c = process.cpuUsage(c0);
  console.log(JSON.stringify({ mode, cpuUsPerRequest: +((c.user + c.system) / N).toFixed(1) }));
  agent.destroy();
  server.close();
});
