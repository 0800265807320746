variable "replicas" {
  type    = number
  default = 0
  validation {
    condition     = var.replicas > 0
    error_message = "Replicas must be at least 1."
  }
}

variable "image" {
  type = string
}

locals {
  a = local.b
  b = local.a
}

job "example" {
  datacenters = [var.datacenter]
  group "web" {
    count = var.replicas
    task "web" {
      driver = "raw_exec"
      config {
        command = uper("/bin/app")
      }
    }
  }
}
