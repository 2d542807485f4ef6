output "ids" {
  description = "Secret id => full resource id."
  value       = { for k, s in google_secret_manager_secret.secret : k => s.id }
}
