#!/usr/bin/env node
// One source for the alert rules: deploy/prometheus/alerts.yml (compose's
// Prometheus). This renders it as the Managed Service for Prometheus `Rules`
// object that k8s/base deploys on GKE, so the two never differ.
//   npm run deploy:rules            rewrite k8s/base/alert-rules.yaml
//   npm run deploy:rules -- --check exit 1 if the committed file is stale
// test/unit/deploy/observability.spec.ts runs the check in npm test.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { parse, stringify } = require('yaml');

const root = join(__dirname, '..');
const SOURCE = 'deploy/prometheus/alerts.yml';
const TARGET = 'k8s/base/alert-rules.yaml';
const RULE_KEYS = ['alert', 'expr', 'for', 'labels', 'annotations'];
/**
 * Where the alerts' runbook links point: the repository's docs on its main branch, so that
 * Alertmanager, Grafana and the Cloud console show them as links. A fork or a mirror that
 * serves the docs elsewhere changes it here and in deploy/prometheus/alerts.yml together
 * (test/unit/deploy/observability.spec.ts checks every link against docs/operations.md).
 */
const RUNBOOK_BASE_URL = 'https://github.com/dlock/dlock/blob/main/';

/** The GMP Rules object for the rule file's text (every group needs an interval there). */
function rulesObject(sourceText) {
  const groups = parse(sourceText).groups.map((g) => {
    if (!g.interval) throw new Error(`${SOURCE}: group ${g.name} has no interval (GMP needs one)`);
    return {
      name: g.name,
      interval: g.interval,
      rules: g.rules.map((r) =>
        Object.fromEntries(RULE_KEYS.filter((k) => r[k] !== undefined).map((k) => [k, r[k]])),
      ),
    };
  });
  return {
    apiVersion: 'monitoring.googleapis.com/v1',
    kind: 'Rules',
    metadata: { name: 'dlock-alerts' },
    spec: { groups },
  };
}

/** The file's full text, formatted as `prettier --check` expects. */
async function render() {
  const prettier = await import('prettier');
  const header = [
    `# GENERATED from ${SOURCE} by \`npm run deploy:rules\`: edit the source, not this file.`,
    '# Managed Service for Prometheus evaluates these against the dlock namespace',
    '# (docs/operations.md "Alerts").',
  ].join('\n');
  const body = stringify(rulesObject(readFileSync(join(root, SOURCE), 'utf8')), {
    lineWidth: 0,
  });
  const options = (await prettier.resolveConfig(join(root, TARGET))) ?? {};
  return prettier.format(`${header}\n${body}`, { ...options, parser: 'yaml' });
}

async function main() {
  const text = await render();
  const path = join(root, TARGET);
  if (process.argv.includes('--check')) {
    if (readFileSync(path, 'utf8') !== text) {
      console.error(`${TARGET} differs from ${SOURCE}: run \`npm run deploy:rules\``);
      process.exitCode = 1;
    }
    return;
  }
  writeFileSync(path, text);
  console.log(`[dlock] wrote ${TARGET}`);
}

module.exports = { render, rulesObject, RUNBOOK_BASE_URL, SOURCE, TARGET };
if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
