#!/bin/sh
# Creates the Secrets the local overlay expects, with fresh random passwords.
# Nothing secret is ever committed: run this once per kind/minikube cluster,
# before `kubectl apply -k k8s/overlays/local`.
set -eu
ns=dlock
kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns"
pw() { head -c 24 /dev/urandom | base64 | tr -d '/+=' ; }
# A signing ring of one Ed25519 key (docs/security.md, "Signed grants"; `npm run keys` rotates it).
ring() {
  node -e "const c=require('node:crypto');const k=c.generateKeyPairSync('ed25519').privateKey.export({format:'jwk'});
process.stdout.write(JSON.stringify({keys:[{...k,kid:c.randomUUID(),alg:'EdDSA',use:'sig'}]}))"
}
admin_lock=$(pw); app_lock=$(pw); admin_pay=$(pw); app_pay=$(pw); reader=$(pw)

kubectl -n "$ns" create secret generic pg-lock-credentials \
  --from-literal=admin-password="$admin_lock" --from-literal=app-password="$app_lock" \
  --from-literal=readonly-password="$reader"
kubectl -n "$ns" create secret generic pg-pay-credentials \
  --from-literal=admin-password="$admin_pay" --from-literal=app-password="$app_pay" \
  --from-literal=readonly-password="$reader"
kubectl -n "$ns" create secret generic lock-server-db \
  --from-literal=lockdb-url="postgres://lock_app:$app_lock@pg-lock:5432/lockdb" \
  --from-literal=grant-keys.json="$(ring)"
kubectl -n "$ns" create secret generic payment-resource-db \
  --from-literal=paydb-url="postgres://pay_app:$app_pay@pg-pay:5432/paydb" \
  --from-literal=instruction-keys.json="$(ring)"
kubectl -n "$ns" create secret generic rail-proxy-db \
  --from-literal=proxydb-url="postgres://proxy_app:$app_pay@pg-pay:5432/proxydb"
kubectl -n "$ns" create secret generic reconciler-db \
  --from-literal=paydb-url="postgres://reconciler_ro:$reader@pg-pay:5432/paydb" \
  --from-literal=proxydb-url="postgres://reconciler_ro:$reader@pg-pay:5432/proxydb"
echo "secrets created in namespace $ns"
