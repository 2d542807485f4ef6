# dlock dev environment: GKE Autopilot + two Cloud SQL instances + Secret
# Manager + Workload Identity + budget, in dlock-lab / europe-central2 (docs/operations.md).
# Apply order on a new project: budget first (NFR-14), then the rest:
#   terraform apply -target=module.budget && terraform apply
locals {
  namespace = "dlock"

  # Keep in step with k8s/overlays/gke-dev/cloudsql-egress.yaml.
  cloudsql_psa_cidr = "10.60.0.0/20"

  # Each KSA in k8s/base/serviceaccounts.yaml => what it may reach. Least
  # privilege: executor and rail-stub get an identity and nothing else.
  workloads = {
    "lock-server"      = { cloudsql_instances = ["dlock-pg-lock"], secret_ids = ["dlock-lockdb-url", "dlock-grant-keys"] }
    "payment-resource" = { cloudsql_instances = ["dlock-pg-pay"], secret_ids = ["dlock-paydb-url", "dlock-instruction-keys"] }
    "rail-proxy"       = { cloudsql_instances = ["dlock-pg-pay"], secret_ids = ["dlock-proxydb-url", "dlock-receipt-keys"] }
    "reconciler"       = { cloudsql_instances = ["dlock-pg-pay"], secret_ids = ["dlock-recon-paydb-url", "dlock-recon-proxydb-url"] }
    "executor"         = { cloudsql_instances = [], secret_ids = [] }
    "rail-stub"        = { cloudsql_instances = [], secret_ids = [] }
  }
}

resource "google_project_service" "api" {
  for_each = toset([
    "artifactregistry.googleapis.com",
    "billingbudgets.googleapis.com",
    "compute.googleapis.com",
    "container.googleapis.com",
    "monitoring.googleapis.com",
    "secretmanager.googleapis.com",
    "servicenetworking.googleapis.com",
    "sqladmin.googleapis.com",
  ])
  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

module "budget" {
  source          = "../../modules/budget"
  project_id      = var.project_id
  billing_account = var.billing_account
  monthly_amount  = var.monthly_budget
  alert_email     = var.alert_email

  depends_on = [google_project_service.api]
}

resource "google_artifact_registry_repository" "images" {
  project       = var.project_id
  location      = var.region
  repository_id = "dlock"
  format        = "DOCKER"
  description   = "The dlock service image (Dockerfile)."

  depends_on = [google_project_service.api]
}

module "gke" {
  source              = "../../modules/gke-autopilot"
  project_id          = var.project_id
  region              = var.region
  name                = "dlock-dev"
  nodes_cidr          = "10.10.0.0/20"
  pods_cidr           = "10.20.0.0/14"
  services_cidr       = "10.30.0.0/20"
  master_cidr         = "172.16.0.32/28"
  deletion_protection = var.deletion_protection

  depends_on = [google_project_service.api]
}

module "cloudsql" {
  source              = "../../modules/cloudsql"
  project_id          = var.project_id
  region              = var.region
  network_id          = module.gke.network_id
  psa_cidr            = local.cloudsql_psa_cidr
  deletion_protection = var.deletion_protection

  instances = {
    # Lock backend: synchronous standby, so a failover loses no grant or fence (NFR-05).
    "dlock-pg-lock" = {
      tier              = "db-custom-1-3840"
      availability_type = "REGIONAL"
      databases         = ["lockdb"]
      users             = ["lock_app"]
    }
    # Protected resource: zonal for cost; paydb and proxydb side by side, separate owners.
    "dlock-pg-pay" = {
      tier              = "db-custom-1-3840"
      availability_type = "ZONAL"
      databases         = ["paydb", "proxydb"]
      users             = ["pay_app", "proxy_app", "reconciler_ro"]
    }
  }
}

module "secrets" {
  source     = "../../modules/secrets"
  project_id = var.project_id
  region     = var.region
  secret_ids = distinct(flatten([for w in values(local.workloads) : w.secret_ids]))

  depends_on = [google_project_service.api]
}

module "workload_identity" {
  source     = "../../modules/workload-identity"
  project_id = var.project_id
  namespace  = local.namespace
  workloads  = local.workloads

  # The secrets and the cluster's identity pool must exist before the bindings.
  depends_on = [module.secrets, module.gke]
}
