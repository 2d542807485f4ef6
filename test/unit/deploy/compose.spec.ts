// docker-compose.yml (docs/operations.md, NFR-15): checked by the compose CLI itself, which
// parses and schema-validates the file without an engine, then by structure.
import { findTool, parseYamlFile, run } from './deploy-tools';

const APPS: Record<string, number> = {
  'lock-server': 8081,
  'payment-resource': 8082,
  'rail-proxy': 8083,
  executor: 8084,
  'rail-stub': 8085,
  reconciler: 8086,
  console: 8090,
};
/** DLOCK_PORT_LOCK_SERVER, …: the host port, the service's own by default. */
const portVar = (app: string) => `DLOCK_PORT_${app.toUpperCase().replace('-', '_')}`;

/** `docker compose` (v2 plugin) when present, else Debian's docker-compose (v1.29). */
function composeCommand(): [string, string[]] {
  const docker = findTool('docker');
  if (docker && run(docker, ['compose', 'version']).status === 0) return [docker, ['compose']];
  const v1 = findTool('docker-compose');
  if (v1) return [v1, []];
  throw new Error(
    'no compose CLI: install the docker compose plugin or `apt-get install docker-compose` (node scripts/ensure-deploy-tools.js)',
  );
}

describe('docker-compose.yml', () => {
  const compose = parseYamlFile('docker-compose.yml');
  const services = compose.services as Record<string, any>;

  it.each([[[] as string[]], [['--profile', 'etcd']]])(
    'is accepted by the compose CLI (profiles %j)',
    (profile) => {
      const [cmd, prefix] = composeCommand();
      const res = run(cmd, [...prefix, '-f', 'docker-compose.yml', ...profile, 'config', '-q'], {
        env: { ...process.env, LOCK_BACKEND: 'etcd' },
      });
      expect(res.stderr).toBe('');
      expect(res.status).toBe(0);
    },
  );

  it('has two PostgreSQL instances: lockdb alone, paydb + proxydb together', () => {
    // The official image unless DLOCK_POSTGRES_IMAGE names another (npm run images:local).
    expect(services['pg-lock'].image).toMatch(/^\$\{DLOCK_POSTGRES_IMAGE:-postgres:16-/);
    expect(services['pg-pay'].image).toBe(services['pg-lock'].image);
    expect(services['pg-lock'].environment.DLOCK_DATABASES).toBe('lockdb:lock_app');
    expect(services['pg-pay'].environment.DLOCK_DATABASES).toBe('paydb:pay_app proxydb:proxy_app');
    for (const pg of ['pg-lock', 'pg-pay']) {
      expect(services[pg].volumes).toContain(
        './k8s/overlays/local/postgres/init-app-dbs.sh:/docker-entrypoint-initdb.d/10-init-app-dbs.sh:ro',
      );
    }
  });

  it('runs etcd only under the etcd profile, and lock-server can switch to it', () => {
    expect(services.etcd.profiles).toEqual(['etcd']);
    expect(services['lock-server'].environment.LOCK_BACKEND).toBe('${LOCK_BACKEND:-pg}');
    expect(services['lock-server'].environment.ETCD_ENDPOINTS).toBe('http://etcd:2379');
  });

  it('migrates once, before any app starts', () => {
    // The entrypoint's migration mode: the TypeORM CLI on each database's data source.
    expect(services.migrate.command.slice(0, 2)).toEqual(['sh', '-c']);
    expect(services.migrate.command[2]).toContain(
      'for db in lockdb paydb proxydb; do node node_modules/typeorm/cli.js migration:run -d dist/migrations/$$db/data-source.js || exit 1;',
    );
    expect(services.migrate.restart).toBe('no');
    expect(Object.keys(services.migrate.environment).sort()).toEqual([
      'LOCKDB_URL',
      'PAYDB_URL',
      'PROXYDB_URL',
    ]);
    for (const app of Object.keys(APPS).filter((a) => a !== 'rail-stub')) {
      expect(services[app].depends_on.migrate).toEqual({
        condition: 'service_completed_successfully',
      });
    }
  });

  it('runs every service from the one image with its own APP and PORT (docs/operations.md)', () => {
    for (const [app, port] of Object.entries(APPS)) {
      expect(services[app].image).toBe('dlock:local');
      expect(services[app].environment.APP).toBe(app);
      expect(services[app].environment.PORT).toBe(String(port));
      expect(services[app].ports).toEqual([`127.0.0.1:\${${portVar(app)}:-${port}}:${port}`]);
    }
  });

  it('gives each app only the database URLs it owns', () => {
    const dbVars = (app: string) =>
      Object.keys(services[app].environment)
        .filter((k) => k.endsWith('DB_URL'))
        .sort();
    expect(dbVars('lock-server')).toEqual(['LOCKDB_URL']);
    expect(dbVars('payment-resource')).toEqual(['PAYDB_URL']);
    expect(dbVars('rail-proxy')).toEqual(['PROXYDB_URL']);
    expect(dbVars('executor')).toEqual([]);
    expect(dbVars('rail-stub')).toEqual([]);
    expect(dbVars('reconciler')).toEqual(['LOCKDB_URL', 'PAYDB_URL', 'PROXYDB_URL']);
    for (const v of ['LOCKDB_URL', 'PAYDB_URL', 'PROXYDB_URL']) {
      expect(services.reconciler.environment[v]).toContain('reconciler_ro');
    }
  });

  it('scrapes every app with Prometheus and loads the alert rules', () => {
    expect(services.prometheus.volumes).toEqual([
      './deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
      './deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro',
    ]);
    const prom = parseYamlFile('deploy/prometheus/prometheus.yml');
    const targets = Object.fromEntries(
      (prom.scrape_configs as any[]).map((c) => [c.job_name, c.static_configs[0].targets[0]]),
    );
    // The console is a reader of the services, without a scrape job of its own (as in k8s).
    for (const [app, port] of Object.entries(APPS).filter(([a]) => a !== 'console'))
      expect(targets[app]).toBe(`${app}:${port}`);
  });

  it("sends every app's spans to the Jaeger service over OTLP/HTTP", () => {
    expect(services.jaeger.image).toMatch(/^jaegertracing\/all-in-one:/);
    expect(services.jaeger.ports).toEqual(['127.0.0.1:16686:16686']);
    for (const app of Object.keys(APPS)) {
      expect(services[app].environment.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://jaeger:4318');
      expect(services[app].environment.OTEL_TRACES_EXPORTER).toBe('${OTEL_TRACES_EXPORTER:-otlp}');
    }
  });
});
