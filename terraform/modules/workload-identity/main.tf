# One Google service account per Kubernetes service account (NFR-13), bound
# through Workload Identity, with least privilege: Cloud SQL client on its own
# instance only (IAM condition) and secretAccessor on its own secrets only.
# No service account key is ever created.
locals {
  sql_grants = merge([
    for ksa, w in var.workloads : {
      for instance in w.cloudsql_instances : "${ksa}/${instance}" => { ksa = ksa, instance = instance }
    }
  ]...)
  secret_grants = merge([
    for ksa, w in var.workloads : {
      for secret in w.secret_ids : "${ksa}/${secret}" => { ksa = ksa, secret = secret }
    }
  ]...)
}

resource "google_service_account" "workload" {
  for_each = var.workloads

  project      = var.project_id
  account_id   = "dlock-${each.key}"
  display_name = "dlock ${each.key} (KSA ${var.namespace}/${each.key})"
}

resource "google_service_account_iam_member" "workload_identity" {
  for_each = var.workloads

  service_account_id = google_service_account.workload[each.key].name
  role               = "roles/iam.workloadIdentityUser"
  member             = "serviceAccount:${var.project_id}.svc.id.goog[${var.namespace}/${each.key}]"
}

resource "google_project_iam_member" "cloudsql_client" {
  for_each = local.sql_grants

  project = var.project_id
  role    = "roles/cloudsql.client"
  member  = "serviceAccount:${google_service_account.workload[each.value.ksa].email}"

  condition {
    title      = "only-${each.value.instance}"
    expression = "resource.name == \"projects/${var.project_id}/instances/${each.value.instance}\" && resource.type == \"sqladmin.googleapis.com/Instance\""
  }
}

resource "google_secret_manager_secret_iam_member" "accessor" {
  for_each = local.secret_grants

  project   = var.project_id
  secret_id = each.value.secret
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.workload[each.value.ksa].email}"
}
