#!/usr/bin/env bash
# Measures the per-task cost of the exec driver with the real binary, beside
# raw_exec for comparison (needs root and cgroups, like the driver):
#   for each driver, a 100-count job of `/bin/sleep 3600` (cpu 20, memory 10):
#   `job run` → all 100 running, and the agent's RSS before and after.
# Usage: sudo scripts/measure-exec.sh [path/to/nomad]   (builds bin/nomad when absent)
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
for driver in ${DRIVERS:-exec raw_exec}; do
  cat > "$work/$driver.nomad.hcl" <<HCL
job "k100-$driver" {
  datacenters = ["dc1"]
  group "g" {
    count = 100
    ephemeral_disk {
      size = 10
    }
    task "t" {
      driver = "$driver"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 20
        memory = 10
      }
    }
  }
}
HCL
done
export NOMAD_ADDR=http://127.0.0.1:$http

now() { date +%s.%N; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

"$bin" agent -dev -data-dir "$work/data" -config "$work/agent.hcl" >"$work/agent.log" 2>&1 &
agent=$!
trap 'kill $agent 2>/dev/null; wait $agent 2>/dev/null; rm -rf "$work"' EXIT

deadline=$(( $(date +%s) + 30 ))
until curl -fs "$NOMAD_ADDR/v1/nodes" 2>/dev/null | grep -q '"Status":"ready"'; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "node not ready after 30s"; tail -20 "$work/agent.log"; exit 1; }
  sleep 0.01
done
sleep 5

for driver in ${DRIVERS:-exec raw_exec}; do
  job="k100-$driver"
  before=$(rss_kb $agent)
  start=$(now)
  "$bin" job run -detach "$work/$driver.nomad.hcl" >/dev/null
  deadline=$(( $(date +%s) + 120 ))
  running=0
  while [ "$running" != "100" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "$driver: only $running running after 120s"; tail -20 "$work/agent.log"; exit 1; }
    sleep 0.05
    running=$( (curl -fs "$NOMAD_ADDR/v1/job/$job/summary" 2>/dev/null || true) | sed -n 's/.*"g":{[^}]*"Running":\([0-9]*\).*/\1/p')
  done
  done_t=$(now)
  sleep 2
  after=$(rss_kb $agent)
  printf '%-8s 100 tasks, job run → all running: %.2f s (%.1f ms a task); agent RSS %d → %d MiB (+%d KiB)\n' \
    "$driver" "$(echo "$done_t - $start" | bc)" "$(echo "($done_t - $start) * 10" | bc)" \
    $((before / 1024)) $((after / 1024)) $((after - before))
  "$bin" job stop -purge -detach "$job" >/dev/null
  deadline=$(( $(date +%s) + 60 ))
  while curl -fs "$NOMAD_ADDR/v1/job/$job/summary" 2>/dev/null | grep -q '"Running":[1-9]'; do
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 0.2
  done
  sleep 8
done
