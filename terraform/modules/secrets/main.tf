# Secret Manager secrets (containers only). Values are added by the operator with
# `gcloud secrets versions add` (docs/operations.md), never by Terraform, so no
# credential is ever written to Terraform state (docs/security.md).
resource "google_secret_manager_secret" "secret" {
  for_each = toset(var.secret_ids)

  project   = var.project_id
  secret_id = each.value

  replication {
    user_managed {
      replicas {
        location = var.region
      }
    }
  }

  labels = {
    app = "dlock"
  }
}
