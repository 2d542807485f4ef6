output "connection_names" {
  description = "project:region:instance, as the Cloud SQL Auth Proxy sidecars name them."
  value       = { for name, i in google_sql_database_instance.instance : name => i.connection_name }
}

output "private_ips" {
  value = { for name, i in google_sql_database_instance.instance : name => i.private_ip_address }
}
