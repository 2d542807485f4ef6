variable "project_id" {
  type = string
}

variable "billing_account" {
  type        = string
  description = "Billing account id (XXXXXX-XXXXXX-XXXXXX) the budget watches."
}

variable "monthly_amount" {
  type        = number
  description = "Monthly budget in currency_code units."
}

variable "currency_code" {
  type        = string
  description = "Must be the billing account's currency."
  default     = "EUR"
}

variable "alert_email" {
  type        = string
  description = "Receives the 50/90/100 % and forecast alerts."
}
