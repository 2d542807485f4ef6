variable "project_id" {
  type    = string
  default = "dlock-lab"
}

variable "region" {
  type    = string
  default = "europe-central2"
}

variable "billing_account" {
  type        = string
  description = "Billing account id for the budget (NFR-14)."
}

variable "alert_email" {
  type        = string
  description = "Where budget alerts go."
}

variable "monthly_budget" {
  type        = number
  description = "Monthly budget of the dev project, in EUR."
  default     = 150
}

variable "deletion_protection" {
  type    = bool
  default = true
}
