#!/usr/bin/env bash
# Measures the per-task cost of the docker driver with the real binary
# against a private Podman service (needs root and Debian's podman, runc and
# busybox-static): a job of N (default 100) `sleep 3600` containers (cpu 20,
# memory 10): `job run` → all running, and the agent's RSS before and after.
# The Podman service keeps its storage and config in a temporary directory.
# Usage: sudo [N=100] scripts/measure-docker.sh [path/to/nomad]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/nomad}
[ -x "$bin" ] || go build -o bin/nomad .
n=${N:-100}

http=$((20000 + RANDOM % 20000)); rpc=$((http + 1))
work=$(mktemp -d)
pm=$work/podman
mkdir -p "$pm"/{conf,root,run,tmp,networks,rootfs/bin,rootfs/tmp}
cat > "$pm/conf/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$pm/tmp"
[network]
network_config_dir = "$pm/networks"
CONF
printf '[storage]\ndriver = "vfs"\nrunroot = "%s"\ngraphroot = "%s"\n' "$pm/run" "$pm/root" > "$pm/conf/storage.conf"
podman_() {
  CONTAINERS_CONF=$pm/conf/containers.conf CONTAINERS_STORAGE_CONF=$pm/conf/storage.conf \
    XDG_RUNTIME_DIR=$pm/run XDG_CONFIG_HOME=$pm/conf podman --root "$pm/root" --runroot "$pm/run" "$@"
}
podman_ system service --time=0 "unix://$pm/podman.sock" >"$work/podman.log" 2>&1 &
service=$!
agent=
cleanup() {
  [ -n "$agent" ] && { kill $agent 2>/dev/null; wait $agent 2>/dev/null || true; }
  podman_ rm --all --force --time 0 >/dev/null 2>&1 || true
  kill $service 2>/dev/null; wait $service 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
until curl -fs --unix-socket "$pm/podman.sock" http://d/_ping >/dev/null 2>&1; do sleep 0.05; done
cp /usr/bin/busybox "$pm/rootfs/bin/"; ln -s busybox "$pm/rootfs/bin/sleep"
tar -C "$pm/rootfs" -cf "$pm/image.tar" .
curl -fs --unix-socket "$pm/podman.sock" -X POST -H 'Content-Type: application/x-tar' \
  --data-binary @"$pm/image.tar" "http://d/images/create?fromSrc=-&repo=localhost/measure:1" >/dev/null

cat > "$work/agent.hcl" <<HCL
ports {
  http = $http
  rpc  = $rpc
}
plugin "docker" {
  config {
    endpoint = "unix://$pm/podman.sock"
  }
}
HCL
cat > "$work/job.nomad.hcl" <<HCL
job "k-docker" {
  datacenters = ["dc1"]
  group "g" {
    count = $n
    ephemeral_disk {
      size = 10
    }
    task "t" {
      driver = "docker"
      config {
        image   = "localhost/measure:1"
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
export NOMAD_ADDR=http://127.0.0.1:$http
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

"$bin" agent -dev -data-dir "$work/data" -config "$work/agent.hcl" >"$work/agent.log" 2>&1 &
agent=$!
deadline=$(( $(date +%s) + 30 ))
until curl -fs "$NOMAD_ADDR/v1/nodes" 2>/dev/null | grep -q '"Status":"ready"'; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "node not ready after 30s"; tail -20 "$work/agent.log"; exit 1; }
  sleep 0.01
done
sleep 5
before=$(rss_kb $agent)
start=$(date +%s.%N)
"$bin" job run -detach "$work/job.nomad.hcl" >/dev/null
deadline=$(( $(date +%s) + 600 ))
running=0
while [ "$running" != "$n" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "only $running running after 600s"; tail -20 "$work/agent.log"; exit 1; }
  sleep 0.1
  running=$( (curl -fs "$NOMAD_ADDR/v1/job/k-docker/summary" 2>/dev/null || true) | sed -n 's/.*"g":{[^}]*"Running":\([0-9]*\).*/\1/p')
done
done_t=$(date +%s.%N)
sleep 2
after=$(rss_kb $agent)
printf 'docker %d tasks, job run → all running: %.2f s (%.1f ms a task); agent RSS %d → %d MiB (+%d KiB, %d KiB a task)\n' \
  "$n" "$(echo "$done_t - $start" | bc)" "$(echo "($done_t - $start) * 1000 / $n" | bc)" \
  $((before / 1024)) $((after / 1024)) $((after - before)) $(( (after - before) / n ))
