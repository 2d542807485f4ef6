// terraform/: `terraform fmt -check` parses every file (HCL syntax) and checks
// layout. `terraform validate` needs the google provider, which cannot be
// downloaded here (no access to registry.terraform.io), so the configuration's
// meaning is asserted below instead (docs/operations.md "Offline checks").
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { findTool, parseYamlDocs, readRepoFile, repoRoot, run } from './deploy-tools';

const MODULES = ['gke-autopilot', 'cloudsql', 'secrets', 'workload-identity', 'budget'];

function tfFiles(dir: string): string[] {
  return readdirSync(join(repoRoot, dir)).flatMap((f) => {
    const rel = `${dir}/${f}`;
    if (statSync(join(repoRoot, rel)).isDirectory()) return f.startsWith('.') ? [] : tfFiles(rel);
    return f.endsWith('.tf') ? [rel] : [];
  });
}
const allTf = () => tfFiles('terraform').map((f) => [f, readRepoFile(f)] as const);
const devMain = () => readRepoFile('terraform/envs/dev/main.tf');

/** The `workloads` map of envs/dev: KSA => { cloudsql_instances, secret_ids }. */
function workloads(): Record<string, { sql: string[]; secrets: string[] }> {
  const out: Record<string, { sql: string[]; secrets: string[] }> = {};
  const line =
    /^\s*"([a-z-]+)"\s*=\s*\{\s*cloudsql_instances\s*=\s*\[([^\]]*)\],\s*secret_ids\s*=\s*\[([^\]]*)\]\s*\}/gm;
  const list = (s: string) => [...s.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
  for (const m of devMain().matchAll(line)) out[m[1]] = { sql: list(m[2]), secrets: list(m[3]) };
  return out;
}

describe('terraform', () => {
  it('is formatted and parses (terraform fmt -check -recursive)', () => {
    const tf = findTool('terraform');
    if (!tf) {
      throw new Error(
        'terraform >= 1.6 is required (not packaged by Debian or npm): install it from HashiCorp and put it on PATH',
      );
    }
    const res = run(tf, ['fmt', '-check', '-recursive', '-list=true', 'terraform']);
    expect(res.stdout).toBe('');
    expect(res.status).toBe(0);
  });

  it('has the five modules and a dev env using each of them', () => {
    for (const m of MODULES) {
      for (const f of ['main.tf', 'variables.tf', 'outputs.tf', 'versions.tf']) {
        expect(statSync(join(repoRoot, 'terraform/modules', m, f)).isFile()).toBe(true);
      }
      expect(devMain()).toMatch(new RegExp(`source\\s+= "\\.\\./\\.\\./modules/${m}"`));
    }
  });

  it('puts GKE Autopilot in dlock-lab / europe-central2 with Workload Identity and the Secret Manager add-on', () => {
    const vars = readRepoFile('terraform/envs/dev/variables.tf');
    expect(vars).toMatch(/variable "project_id" \{\s*type\s*= string\s*default = "dlock-lab"/);
    expect(vars).toMatch(/variable "region" \{\s*type\s*= string\s*default = "europe-central2"/);
    const gke = readRepoFile('terraform/modules/gke-autopilot/main.tf');
    expect(gke).toMatch(/enable_autopilot\s*= true/);
    expect(gke).toMatch(/workload_pool = "\$\{var.project_id\}.svc.id.goog"/);
    expect(gke).toMatch(/secret_manager_config \{\s*enabled = true/);
  });

  it('creates dlock-pg-lock REGIONAL with lockdb and dlock-pg-pay ZONAL with paydb and proxydb', () => {
    const main = devMain();
    expect(main).toMatch(
      /"dlock-pg-lock" = \{[^}]*availability_type = "REGIONAL"\s*databases\s*= \["lockdb"\]/,
    );
    expect(main).toMatch(
      /"dlock-pg-pay" = \{[^}]*availability_type = "ZONAL"\s*databases\s*= \["paydb", "proxydb"\]/,
    );
    expect(readRepoFile('terraform/modules/cloudsql/main.tf')).toMatch(/ipv4_enabled\s*= false/);
  });

  it('keeps credentials out of Terraform: no password, no service account key', () => {
    for (const [file, text] of allTf()) {
      expect([file, /^\s*password\s*=/m.test(text)]).toEqual([file, false]);
      expect([file, text.includes('google_service_account_key')]).toEqual([file, false]);
      expect([file, text.includes('google_secret_manager_secret_version')]).toEqual([file, false]);
    }
  });

  it('gives each KSA its own Google SA with only cloudsql.client on its instance and its own secrets', () => {
    const wi = readRepoFile('terraform/modules/workload-identity/main.tf');
    const roles = [...wi.matchAll(/role\s*= "([^"]+)"/g)].map((m) => m[1]).sort();
    expect(roles).toEqual([
      'roles/cloudsql.client',
      'roles/iam.workloadIdentityUser',
      'roles/secretmanager.secretAccessor',
    ]);
    // secretAccessor is granted per secret, never project-wide; cloudsql.client is conditioned.
    expect(wi).toMatch(/google_secret_manager_secret_iam_member" "accessor"/);
    expect(wi).toMatch(/resource.name == \\"projects\/\$\{var.project_id\}\/instances\//);
    expect(wi).toContain(
      'serviceAccount:${var.project_id}.svc.id.goog[${var.namespace}/${each.key}]',
    );

    expect(workloads()).toEqual({
      // The signing rings of grant proofs, payout instructions and rail receipts (docs/security.md).
      'lock-server': { sql: ['dlock-pg-lock'], secrets: ['dlock-lockdb-url', 'dlock-grant-keys'] },
      'payment-resource': {
        sql: ['dlock-pg-pay'],
        secrets: ['dlock-paydb-url', 'dlock-instruction-keys'],
      },
      'rail-proxy': { sql: ['dlock-pg-pay'], secrets: ['dlock-proxydb-url', 'dlock-receipt-keys'] },
      reconciler: {
        sql: ['dlock-pg-pay'],
        secrets: ['dlock-recon-paydb-url', 'dlock-recon-proxydb-url'],
      },
      executor: { sql: [], secrets: [] },
      'rail-stub': { sql: [], secrets: [] },
    });
  });

  it('matches the k8s side: SA annotations, SecretProviderClasses, Cloud SQL egress range', () => {
    const w = workloads();
    const sas = parseYamlDocs(readRepoFile('k8s/base/serviceaccounts.yaml'));
    for (const sa of sas.filter((s) => s.metadata.annotations)) {
      expect(Object.keys(w)).toContain(sa.metadata.name);
      expect(sa.metadata.annotations['iam.gke.io/gcp-service-account']).toBe(
        `dlock-${sa.metadata.name}@dlock-lab.iam.gserviceaccount.com`,
      );
    }
    for (const spc of parseYamlDocs(
      readRepoFile('k8s/overlays/gke-dev/secretproviderclasses.yaml'),
    )) {
      const ids = parseYamlDocs(spc.spec.parameters.secrets)[0].map(
        (s: Record<string, string>) => /secrets\/([^/]+)\/versions/.exec(s.resourceName)![1],
      );
      expect(ids).toEqual(w[spc.metadata.name].secrets);
    }
    const psa = /cloudsql_psa_cidr = "([^"]+)"/.exec(devMain())![1];
    expect(readRepoFile('k8s/overlays/gke-dev/cloudsql-egress.yaml')).toContain(`cidr: ${psa}`);
  });

  it('configures a budget alert before anything else (NFR-14)', () => {
    const budget = readRepoFile('terraform/modules/budget/main.tf');
    expect(budget).toMatch(/resource "google_billing_budget" "project"/);
    expect([...budget.matchAll(/threshold_percent = ([\d.]+)/g)].map((m) => m[1])).toEqual([
      '0.5',
      '0.9',
      '1.0',
      '1.0',
    ]);
    expect(budget).toMatch(
      /monitoring_notification_channels = \[google_monitoring_notification_channel.email.id\]/,
    );
    expect(devMain()).toContain('terraform apply -target=module.budget');
  });
});
