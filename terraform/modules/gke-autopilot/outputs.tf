output "cluster_name" {
  value = google_container_cluster.autopilot.name
}

output "network_id" {
  value = google_compute_network.vpc.id
}

output "workload_pool" {
  value = "${var.project_id}.svc.id.goog"
}
