output "emails" {
  description = "KSA name => Google SA email (the iam.gke.io/gcp-service-account annotation in k8s/base)."
  value       = { for k, sa in google_service_account.workload : k => sa.email }
}
