variable "project_id" {
  type = string
}

variable "namespace" {
  type        = string
  description = "Kubernetes namespace of the service accounts (k8s/base: dlock)."
}

variable "workloads" {
  type = map(object({
    cloudsql_instances = list(string)
    secret_ids         = list(string)
  }))
  description = "KSA name => the Cloud SQL instances and secrets it may use (empty lists: no access)."
}
