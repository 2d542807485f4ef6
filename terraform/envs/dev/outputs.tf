output "cluster_name" {
  value = module.gke.cluster_name
}

output "cloudsql_connection_names" {
  value = module.cloudsql.connection_names
}

output "workload_service_accounts" {
  value = module.workload_identity.emails
}

output "image_repository" {
  value = "${var.region}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
}
