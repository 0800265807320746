job "example" {
  datacenters = ["dc1"]
  update {
    health_check = "checks"
  }

  group "web" {
    scaling {
      port "http" {}
    }

    task "web" {
      driver = "docker"
      service {
        name = "web"
      }
      kind = "web"
      template {
        data = "x"
      }
    }
  }
}
