job "example" {
  datacenters = ["dc1"]
  update {
    health_check = "consul"
  }

  group "web" {
    scaling {
      port "http" {}
    }

    task "web" {
      driver = "docker"
      service {
        provider = "consul"
      }
      kind = "web"
      vault {
        policies = ["x"]
      }
    }
  }
}
