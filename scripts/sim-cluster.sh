#!/usr/bin/env bash
# Starts three servers on loopback (real `nomad agent -server` processes,
# raft on disk in a temporary directory) and the client simulator against
# them; Ctrl-C stops everything and removes the directory.
#
# Usage: scripts/sim-cluster.sh [nomad operator sim flags...]
#   e.g. scripts/sim-cluster.sh -count 1000 -control-addr 127.0.0.1:4700
#
# Environment: NOMAD_BIN (default bin/nomad, built when absent),
# SIM_BASE_PORT (default 4646: server i uses base+10i for HTTP, +1 RPC,
# +2 serf), SIM_SERVER_EXTRA (HCL lines added inside each server block,
# e.g. 'heartbeat_grace = "5s"'), SIM_AGENT_EXTRA (top-level HCL lines,
# e.g. 'enable_debug = true'), SIM_LOG_LEVEL (the servers', WARN by default),
# SIM_WORK (keep the directory there; the
# servers' and the simulator's PIDs are written into it), SIM_GOGC and
# SIM_GOMEMLIMIT (the simulator's GOGC, 400, and GOMEMLIMIT, 14GiB).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${NOMAD_BIN:-bin/nomad}
[ -x "$bin" ] || go build -o bin/nomad .
base=${SIM_BASE_PORT:-4646}
work=${SIM_WORK:-$(mktemp -d)}
mkdir -p "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # A server left without quorum may take long to stop; after 15 s it is
  # killed, so a benchmark loop does not wait on it.
  for _ in $(seq 1 75); do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${SIM_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT INT TERM

joins=""
for i in 0 1 2; do joins+="\"127.0.0.1:$((base + 10 * i + 2))\", "; done
servers=""
for i in 0 1 2; do
  http=$((base + 10 * i)); rpc=$((http + 1)); serf=$((http + 2))
  mkdir -p "$work/server-$i"
  cat > "$work/server-$i.hcl" <<HCL
name      = "server-$i"
data_dir  = "$work/server-$i"
bind_addr = "127.0.0.1"
log_level = "${SIM_LOG_LEVEL:-WARN}"
${SIM_AGENT_EXTRA:-}
ports {
  http = $http
  rpc  = $rpc
  serf = $serf
}
server {
  enabled          = true
  bootstrap_expect = 3
  ${SIM_SERVER_EXTRA:-}
  server_join {
    retry_join     = [${joins%, }]
    retry_interval = "1s"
  }
}
HCL
  "$bin" agent -config "$work/server-$i.hcl" > "$work/server-$i.log" 2>&1 &
  pids+=($!)
  echo $! > "$work/server-$i.pid"
  servers+="127.0.0.1:$rpc,"
done
echo "==> servers: HTTP http://127.0.0.1:$base (and +10, +20); logs in $work"

# Wait for a leader, so the simulator's first registrations land.
for _ in $(seq 1 60); do
  leader=$(curl -sf "http://127.0.0.1:$base/v1/status/leader" || true)
  [ -n "$leader" ] && [ "$leader" != '""' ] && break
  sleep 1
done
echo "==> leader: ${leader:-none}"
# The simulator's collector: its heap is tens of KB per node, all live,
# so the default GOGC=100 spends much of the machine's CPU collecting,
# which the servers measured beside it lose. SIM_GOGC (400) and
# SIM_GOMEMLIMIT (14GiB) trade memory for that CPU; its figures per node
# are live heap and stack, which this does not change.
GOGC=${SIM_GOGC:-400} GOMEMLIMIT=${SIM_GOMEMLIMIT:-14GiB} "$bin" operator sim -servers "${servers%,}" "$@" &
pids+=($!)
echo $! > "$work/sim.pid"
wait "${pids[-1]}"
