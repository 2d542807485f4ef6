#!/bin/sh
# Creates the Secrets the local overlay expects, with fresh random passwords.
# Nothing secret is ever committed: run this once per kind/minikube cluster,
# before `kubectl apply -k k8s/overlays/local`.
set -eu
ns=dlock
kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns"
pw() { head -c 24 /dev/urandom | base64 | tr -d '/+=' ; }
# A signing ring of one Ed25519 key, NAME.json, and its public half beside it, NAME.jwks.json,
# as `npm run keys -- new` writes them (docs/security.md, "Signed grants"; `npm run keys` rotates).
keys=$(mktemp -d)
trap 'rm -rf "$keys"' EXIT
ring() {
  node -e "const c=require('node:crypto'),fs=require('node:fs');
const jwk={...c.generateKeyPairSync('ed25519').privateKey.export({format:'jwk'}),kid:c.randomUUID(),alg:'EdDSA',use:'sig'};
const {d,...pub}=jwk;
fs.writeFileSync(process.argv[1]+'.json',JSON.stringify({keys:[jwk]}),{mode:0o600});
fs.writeFileSync(process.argv[1]+'.jwks.json',JSON.stringify({keys:[pub]}));" "$keys/$1"
}
ring grant-keys
ring instruction-keys
ring receipt-keys
admin_lock=$(pw); app_lock=$(pw); admin_pay=$(pw); app_pay=$(pw); reader=$(pw)

kubectl -n "$ns" create secret generic pg-lock-credentials \
  --from-literal=admin-password="$admin_lock" --from-literal=app-password="$app_lock" \
  --from-literal=readonly-password="$reader"
kubectl -n "$ns" create secret generic pg-pay-credentials \
  --from-literal=admin-password="$admin_pay" --from-literal=app-password="$app_pay" \
  --from-literal=readonly-password="$reader"
kubectl -n "$ns" create secret generic lock-server-db \
  --from-literal=lockdb-url="postgres://lock_app:$app_lock@pg-lock:5432/lockdb" \
  --from-file=grant-keys.json="$keys/grant-keys.json"
kubectl -n "$ns" create secret generic payment-resource-db \
  --from-literal=paydb-url="postgres://pay_app:$app_pay@pg-pay:5432/paydb" \
  --from-file=instruction-keys.json="$keys/instruction-keys.json"
kubectl -n "$ns" create secret generic rail-proxy-db \
  --from-literal=proxydb-url="postgres://proxy_app:$app_pay@pg-pay:5432/proxydb" \
  --from-file=receipt-keys.json="$keys/receipt-keys.json"
kubectl -n "$ns" create secret generic reconciler-db \
  --from-literal=paydb-url="postgres://reconciler_ro:$reader@pg-pay:5432/paydb" \
  --from-literal=proxydb-url="postgres://reconciler_ro:$reader@pg-pay:5432/proxydb"
# The guards read the public halves as files, never over the network (k8s/base/apps/*.yaml).
kubectl -n "$ns" create configmap dlock-signer-jwks \
  --from-file=grant-keys.jwks.json="$keys/grant-keys.jwks.json" \
  --from-file=instruction-keys.jwks.json="$keys/instruction-keys.jwks.json" \
  --from-file=receipt-keys.jwks.json="$keys/receipt-keys.jwks.json"
echo "secrets created in namespace $ns"
