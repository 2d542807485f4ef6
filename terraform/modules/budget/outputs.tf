output "budget_id" {
  value = google_billing_budget.project.id
}
