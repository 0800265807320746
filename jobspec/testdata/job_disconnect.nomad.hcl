# A job-level disconnect block applies to groups that configure none.
job "sensors" {
  disconnect {
    lost_after = "6h"
    replace    = false
  }

  group "inherits" {
    task "t" {
      driver = "mock_driver"
    }
  }

  group "own-block" {
    disconnect {
      lost_after = "5m"
    }
    task "t" {
      driver = "mock_driver"
    }
  }

  group "legacy" {
    max_client_disconnect = "10m"
    task "t" {
      driver = "mock_driver"
    }
  }
}
