variable "project_id" {
  type = string
}

variable "region" {
  type = string
}

variable "network_id" {
  type        = string
  description = "VPC the instances get their private IP in."
}

variable "psa_cidr" {
  type        = string
  description = "Private services access range for Cloud SQL (also in k8s/overlays/gke-dev/cloudsql-egress.yaml)."
}

variable "instances" {
  type = map(object({
    tier              = string
    availability_type = string
    databases         = list(string)
    users             = list(string)
  }))
  description = "Cloud SQL instances by name, with their databases and login roles."

  validation {
    condition     = alltrue([for i in values(var.instances) : contains(["REGIONAL", "ZONAL"], i.availability_type)])
    error_message = "availability_type must be REGIONAL or ZONAL."
  }
}

variable "deletion_protection" {
  type    = bool
  default = true
}
