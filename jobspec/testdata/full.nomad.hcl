# Every block and attribute the parser supports, at every level.
job "edge-cache" {
  region      = "eu"
  namespace   = "edge"
  datacenters = ["dc1", "dc2"]
  type        = "service"
  priority    = 70
  node_pool   = "lte"
  all_at_once = true

  meta {
    owner = "ops"
    tier  = "edge"
  }

  constraint {
    attribute = "${attr.kernel.name}"
    operator  = "="
    value     = "linux"
  }

  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = -30
  }

  group "cache" {
    count                        = 3
    max_client_disconnect        = "2h"
    stop_after_client_disconnect = "90s"

    constraint {
      distinct_hosts = true
    }

    affinity {
      attribute = "${meta.rack}"
      operator  = "!="
      value     = "r1"
      weight    = 0
    }

    restart {
      attempts = 4
      interval = "10m"
      delay    = "5s"
      mode     = "delay"
    }

    reschedule {
      attempts       = 2
      interval       = "1h"
      delay          = "10s"
      delay_function = "fibonacci"
      max_delay      = "5m"
      unlimited      = false
    }

    ephemeral_disk {
      size    = 500
      sticky  = true
      migrate = true
    }

    meta = {
      "rack.zone" = "a"
    }

    task "redis" {
      driver       = "mock_driver"
      kill_timeout = "20s"
      kill_signal  = "SIGINT"
      user         = "redis"
      leader       = true

      config {
        run_for   = "30s"
        exit_code = 0
        ratio     = 0.5
        verbose   = true
        args      = ["-c", "${NOMAD_TASK_DIR}/redis.conf"]
        labels = {
          app = "redis"
        }
        mount {
          source = "/data"
        }
        mount {
          source = "/logs"
        }
      }

      env {
        PORT = 6379
        DIR  = "${NOMAD_ALLOC_DIR}/data"
      }

      meta {
        role = "primary"
      }

      resources {
        cpu        = 250
        cores      = 0
        memory     = 128
        memory_max = 256
      }

      restart {
        attempts = 1
      }

      constraint {
        attribute = "${attr.cpu.arch}"
        version   = ">= 1.2"
      }

      affinity {
        attribute        = "${node.class}"
        set_contains_any = "fast,ssd"
        weight           = 100
      }
    }
  }

  group "agent" {
    disconnect {
      lost_after           = "1h"
      stop_on_client_after = "30m"
      replace              = false
      reconcile            = "keep_original"
    }

    task "agent" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/agent"
      }
    }
  }
}
