# disconnect.offline_restart is ours, beyond upstream: the official client
# does not know the field, so this file is not among the compatibility
# samples.
job "kiosk" {
  disconnect {
    lost_after      = "6h"
    offline_restart = false
  }

  group "inherits" {
    task "t" {
      driver = "mock_driver"
    }
  }

  group "own" {
    disconnect {
      lost_after      = "1h"
      offline_restart = true
    }
    task "t" {
      driver = "mock_driver"
    }
  }
}
