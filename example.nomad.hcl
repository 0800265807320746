# A service job with one task that runs `sleep` as a plain process.
# Run it against a dev agent with: bin/nomad job run example.nomad.hcl
job "example" {
  datacenters = ["dc1"]
  type        = "service"

  group "sleepers" {
    count = 1

    # Edge links drop: keep the allocation for up to an hour while its node
    # is unreachable instead of declaring it lost at once.
    max_client_disconnect = "1h"

    task "sleep" {
      driver = "raw_exec"

      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
