variable "project_id" {
  type        = string
  description = "GCP project that owns the cluster."
}

variable "region" {
  type        = string
  description = "Region of the Autopilot cluster (regional control plane, nodes in every zone)."
}

variable "name" {
  type        = string
  description = "Cluster name; also prefixes the VPC, subnet, router and NAT."
}

variable "nodes_cidr" {
  type        = string
  description = "Primary range of the node subnet."
}

variable "pods_cidr" {
  type        = string
  description = "Secondary range for pods."
}

variable "services_cidr" {
  type        = string
  description = "Secondary range for Services."
}

variable "master_cidr" {
  type        = string
  description = "/28 for the private control plane endpoint."
}

variable "deletion_protection" {
  type        = bool
  description = "Refuse terraform destroy of the cluster."
  default     = true
}
