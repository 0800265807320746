job "example" {
  datacenters = ["dc1"]
  update {
    max_parallel = 1
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
