job "example" {
  datacenters = ["dc1"]
  update {
    health_check = "checks"
  }

  group "web" {
    network {
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
