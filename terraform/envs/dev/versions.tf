terraform {
  required_version = ">= 1.6"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.0"
    }
  }

  # State holds no credential (terraform/modules/secrets), but keep it private anyway.
  backend "gcs" {
    bucket = "dlock-lab-tfstate"
    prefix = "envs/dev"
  }
}

provider "google" {
  project               = var.project_id
  region                = var.region
  user_project_override = true
  billing_project       = var.project_id
}
