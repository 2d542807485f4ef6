# The two Cloud SQL instances of docs/operations.md: dlock-pg-lock (REGIONAL, synchronous
# standby for the failover experiment) and dlock-pg-pay (ZONAL, cost). Private IP
# only, in a private-services range that k8s/overlays/gke-dev/cloudsql-egress.yaml
# allows (keep psa_cidr and that policy in step).
#
# Users are created without passwords: passwords are set by the operator and
# stored in Secret Manager (docs/operations.md "Rotate"), so no credential ever
# reaches Terraform state.
resource "google_compute_global_address" "psa" {
  project       = var.project_id
  name          = "dlock-cloudsql-psa"
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  address       = split("/", var.psa_cidr)[0]
  prefix_length = tonumber(split("/", var.psa_cidr)[1])
  network       = var.network_id
}

resource "google_service_networking_connection" "psa" {
  network                 = var.network_id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.psa.name]
}

resource "google_sql_database_instance" "instance" {
  for_each = var.instances

  project             = var.project_id
  name                = each.key
  region              = var.region
  database_version    = "POSTGRES_16"
  deletion_protection = var.deletion_protection

  settings {
    tier              = each.value.tier
    edition           = "ENTERPRISE"
    availability_type = each.value.availability_type
    disk_autoresize   = true

    ip_configuration {
      ipv4_enabled    = false
      private_network = var.network_id
      ssl_mode        = "ENCRYPTED_ONLY"
    }

    backup_configuration {
      enabled                        = true
      point_in_time_recovery_enabled = true
      start_time                     = "02:00"
    }

    database_flags {
      name  = "log_min_duration_statement"
      value = "500"
    }
  }

  depends_on = [google_service_networking_connection.psa]
}

locals {
  databases = merge([
    for instance, cfg in var.instances : {
      for db in cfg.databases : db => instance
    }
  ]...)
  users = merge([
    for instance, cfg in var.instances : {
      for user in cfg.users : "${instance}/${user}" => { instance = instance, name = user }
    }
  ]...)
}

resource "google_sql_database" "db" {
  for_each = local.databases

  project  = var.project_id
  instance = google_sql_database_instance.instance[each.value].name
  name     = each.key
}

resource "google_sql_user" "app" {
  for_each = local.users

  project  = var.project_id
  instance = google_sql_database_instance.instance[each.value.instance].name
  name     = each.value.name
  type     = "BUILT_IN"

  lifecycle {
    ignore_changes = [password]
  }
}
