variable "project_id" {
  type = string
}

variable "region" {
  type        = string
  description = "The only location the secret payloads are stored in."
}

variable "secret_ids" {
  type        = list(string)
  description = "Secret ids, e.g. dlock-lockdb-url."
}
