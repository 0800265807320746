#!/usr/bin/env bash
# Measures the dev agent as an operator meets it, with the real binary:
#   1. agent start → node ready (first /v1/nodes answer with a ready node)
#   2. the agent's idle RSS
#   3. a 1,000-count mock_driver job (cpu 1, memory 10, ephemeral disk 10 MB): `job run` → all running
#   4. the agent's RSS with 1,000 allocations running
# Usage: scripts/measure-dev.sh [path/to/nomad]   (builds bin/nomad when absent)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/nomad}
[ -x "$bin" ] || go build -o bin/nomad .

http=$((20000 + RANDOM % 20000)); rpc=$((http + 1))
work=$(mktemp -d)
cat > "$work/agent.hcl" <<HCL
ports {
  http = $http
  rpc  = $rpc
}
HCL
cat > "$work/k1000.nomad.hcl" <<'HCL'
job "k1000" {
  datacenters = ["dc1"]
  group "g" {
    count = 1000
    ephemeral_disk {
      size = 10
    }
    task "t" {
      driver = "mock_driver"
      config {
        run_for = "1h"
      }
      resources {
        cpu    = 1
        memory = 10
      }
    }
  }
}
HCL
export NOMAD_ADDR=http://127.0.0.1:$http

now() { date +%s.%N; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

start=$(now)
"$bin" agent -dev -data-dir "$work/data" -config "$work/agent.hcl" >"$work/agent.log" 2>&1 &
agent=$!
trap 'kill $agent 2>/dev/null; wait $agent 2>/dev/null; rm -rf "$work"' EXIT

deadline=$(( $(date +%s) + 30 ))
until curl -fs "$NOMAD_ADDR/v1/nodes" 2>/dev/null | grep -q '"Status":"ready"'; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "node not ready after 30s"; tail -20 "$work/agent.log"; exit 1; }
  sleep 0.01
done
ready=$(now)
printf 'agent start → node ready: %.3f s\n' "$(echo "$ready - $start" | bc)"
sleep 5
printf 'idle RSS (5 s after ready): %d MiB\n' $(( $(rss_kb $agent) / 1024 ))

start=$(now)
"$bin" job run -detach "$work/k1000.nomad.hcl" >/dev/null
deadline=$(( $(date +%s) + 120 ))
running=0
while [ "$running" != "1000" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "only $running running after 120s"; exit 1; }
  sleep 0.05
  running=$( (curl -fs "$NOMAD_ADDR/v1/job/k1000/summary" 2>/dev/null || true) | sed -n 's/.*"g":{[^}]*"Running":\([0-9]*\).*/\1/p')
done
done_t=$(now)
printf '1,000 mock_driver allocs, job run → all running: %.3f s\n' "$(echo "$done_t - $start" | bc)"
printf 'RSS with 1,000 running: %d MiB\n' $(( $(rss_kb $agent) / 1024 ))
