job "example" {
  priority = "high"

  group "web" {
    count                 = -1
    max_client_disconnect = "1 hour"

    restart {
      interval = 30
      delay    = "5x"
    }

    task "web" {
      driver       = "mock_driver"
      kill_timeout = "soon"
      leader       = "maybe"

      affinity {
        attribute = "${node.class}"
        value     = "x"
        weight    = 500
      }
    }
  }
}
