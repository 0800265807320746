#!/usr/bin/env bash
# Fleet benchmarks with the client simulator: three real server processes
# on loopback (default heartbeat settings, raft on disk) and
# `nomad operator sim` in a separate process (scripts/sim-cluster.sh).
#
#   scripts/sim-bench.sh heartbeat [nodes]   (default 10000)
#       Steady heartbeats: after every node is ready and SETTLE seconds
#       more, for WINDOW seconds: the leader's CPU (share of one core) and
#       RSS, and the heartbeat round trip p50/p99 as the nodes saw it.
#   scripts/sim-bench.sh storm [nodes] [allocs-per-node]   (default 1000 10)
#       Jobs of nodes*allocs allocations in all (10,000 at most each, a
#       group's count cap) with a one-hour disconnect window,
#       every node silenced until all are disconnected and every allocation
#       unknown, then all returned in the same instant: seconds until every
#       node is ready and every allocation running, restarts, allocations
#       beyond the originals, evaluations and raft entries the return cost.
#   scripts/sim-bench.sh flap [nodes] [allocs-per-node]   (default 1000 10)
#       The same job; a random fifth of the nodes flaps (silent 2.5 s of
#       every 5 s) for a minute: the leader's CPU over that minute,
#       evaluations and raft entries it cost, then seconds until every node
#       is ready and every allocation running, restarts, extra allocations.
#   scripts/sim-bench.sh detect [nodes] [fraction]   (default 10000 0.01)
#       The nodes spread over 1/fraction datacenters, a job of one
#       allocation on each node of dc0 with a one-hour disconnect window;
#       SETTLE seconds after all run, the leader's CPU over WINDOW seconds;
#       then the nodes of dc0 are silenced (a dead link: the
#       servers hear nothing): seconds from the cut until each silenced node
#       is disconnected (the time of its "Node heartbeat missed" event),
#       min/median/max, nodes seen not ready that were not silenced (false
#       positives, watched until HOLD seconds after the last one), and the
#       leader's CPU from the cut to the last. SIM_SESSIONS=false runs the
#       nodes without liveness sessions (the heartbeat TTL alone).
#
# Each prints one JSON line of results; a CPU profile of the leader is left
# in $SIM_WORK (default: a new temporary directory, printed).
# Environment: SETTLE (60), WINDOW (120), NOMAD_BIN (default: bin/nomad,
# built first), SIM_LOG_LEVEL (the servers'), SIM_CLIENT_LOG (the simulated
# clients' log level), SIM_TRACE (print progress every 0.1 s in a storm).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: scripts/sim-bench.sh heartbeat|storm|flap|detect [nodes] [allocs-per-node|fraction]}
# A given NOMAD_BIN is used as is, so a series of runs measures one build.
if [ -z "${NOMAD_BIN:-}" ]; then
  go build -o bin/nomad .
  export NOMAD_BIN=bin/nomad
fi
export SIM_WORK=${SIM_WORK:-$(mktemp -d)}
mkdir -p "$SIM_WORK"
export SIM_BASE_PORT=${SIM_BASE_PORT:-$((20000 + RANDOM % 20000))}
export SIM_AGENT_EXTRA='enable_debug = true'
http="http://127.0.0.1:$SIM_BASE_PORT"
ctl_port=$((SIM_BASE_PORT + 40))
ctl="http://127.0.0.1:$ctl_port"
hz=$(getconf CLK_TCK)

start_cluster() { # nodes, sim flags...
  local n=$1; shift
  scripts/sim-cluster.sh -count "$n" -control-addr "127.0.0.1:$ctl_port" -stats-interval 30s ${SIM_CLIENT_LOG:+-log-level "$SIM_CLIENT_LOG"} \
    ${SIM_SESSIONS:+-sessions="$SIM_SESSIONS"} "$@" \
    > "$SIM_WORK/sim.out" 2>&1 &
  cluster_pid=$!
  trap 'kill $cluster_pid 2>/dev/null || true; wait $cluster_pid 2>/dev/null || true' EXIT
  wait_for "all $n nodes ready" 600 "[ \"\$(sim_status | jq .Ready)\" = $n ]"
}
sim_status() { curl -sf "$ctl/v1/sim/status" || echo '{}'; }
wait_for() { # what, seconds, condition
  local deadline=$((SECONDS + $2))
  until eval "$3" 2>/dev/null; do
    if ((SECONDS > deadline)); then echo "timed out waiting for $1" >&2; tail -5 "$SIM_WORK/sim.out" >&2; exit 1; fi
    sleep 0.2
  done
}
leader_addr() { # waits out an election
  local addr=""
  for _ in $(seq 1 100); do
    addr=$(curl -sf "$http/v1/status/leader" | tr -d '"' || true)
    [ -n "$addr" ] && break
    sleep 0.2
  done
  echo "$addr"
}
leader_pid() {
  local addr port i
  addr=$(leader_addr)
  port=${addr##*:}
  i=$(( (port - SIM_BASE_PORT - 1) / 10 ))
  cat "$SIM_WORK/server-$i.pid"
}
leader_http() { local addr; addr=$(leader_addr); echo "http://127.0.0.1:$(( ${addr##*:} - 1 ))"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
servers_ticks() { local t=0 i; for i in 0 1 2; do t=$((t + $(cpu_ticks "$(cat "$SIM_WORK/server-$i.pid")"))); done; echo $t; }
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
raft_index() { curl -sf "$(leader_http)/v1/agent/self" | jq -r '.stats.raft.last_log_index'; }
now() { date +%s.%N; }

heartbeat() {
  local n=${1:-10000}
  start_cluster "$n"
  sleep "${SETTLE:-60}"
  local pid; pid=$(leader_pid)
  curl -sf -XPOST "$ctl/v1/sim/latency/reset" > /dev/null
  local t0 c0 idx0; t0=$(now); c0=$(cpu_ticks "$pid"); idx0=$(raft_index)
  curl -sf "$(leader_http)/v1/agent/pprof/profile?seconds=$(( ${WINDOW:-120} / 2 ))" > "$SIM_WORK/leader-heartbeat.pprof" &
  sleep "${WINDOW:-120}"
  local t1 c1 idx1; t1=$(now); c1=$(cpu_ticks "$pid"); idx1=$(raft_index)
  local same=true; [ "$(leader_pid)" = "$pid" ] || same=false
  curl -sf "$(leader_http)/v1/agent/pprof/heap" > "$SIM_WORK/leader-heap.pprof" || true
  # After a collection (gc=1), so that the status's heap is the live one.
  curl -sf "$ctl/debug/pprof/heap?gc=1" > "$SIM_WORK/sim-heap.pprof" || true
  wait %2 2>/dev/null || true
  local s; s=$(sim_status)
  # The live heap: the bytes of the objects the collection kept, from the
  # profile (HeapInuse also counts the free room of every span in use).
  local live; live=$(go tool pprof -raw -sample_index=inuse_space "$SIM_WORK/sim-heap.pprof" 2>/dev/null |
    awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && $1 ~ /^[0-9]+$/ {sum += $4} END {printf "%.0f", sum}')
  local followers=""
  for f in "$SIM_WORK"/server-*.pid; do
    [ "$(cat "$f")" = "$pid" ] || followers+="$(rss_mib "$(cat "$f")"),"
  done
  jq -cn --argjson s "$s" --arg n "$n" \
    --arg cpu "$(echo "($c1 - $c0) / $hz / ($t1 - $t0) * 100" | bc -l)" --arg rss "$(rss_mib "$pid")" \
    --arg raft "$((idx1 - idx0))" --arg same "$same" --arg followers "${followers%,}" --arg live "${live:-0}" --arg mem "$(grep -o '[0-9]* bytes of live heap and stack per node' "$SIM_WORK/sim.out")" \
    '{mode: "heartbeat", nodes: ($n|tonumber), leader_cpu_pct: ($cpu|tonumber|.*10|round/10), leader_rss_mib: ($rss|tonumber),
      heartbeats: $s.Heartbeat.Count, hb_p50_ms: ($s.Heartbeat.P50/1e6*100|round/100), hb_p99_ms: ($s.Heartbeat.P99/1e6*100|round/100),
      raft_entries_in_window: ($raft|tonumber), same_leader: ($same == "true"), followers_rss_mib: $followers,
      sim: $mem, sim_settled_live_heap_per_node: (($live|tonumber) / ($n|tonumber) | round),
      sim_settled_stack_per_node: ($s.Memory.StackInuse / ($n|tonumber) | round),
      sim_settled_heap_inuse_per_node: ($s.Memory.HeapInuse / ($n|tonumber) | round),
      sim_goroutines: $s.Memory.Goroutines}'
}

# The storm's allocations are spread over jobs of at most 10,000 (a
# group's count cap): STORM_JOBS names them (storm_jobs_for).
STORM_JOBS=(storm)
storm_jobs_for() { # total
  local k=$(( ($1 + 9999) / 10000 )) i
  STORM_JOBS=(storm)
  if ((k > 1)); then STORM_JOBS=(); for ((i = 0; i < k; i++)); do STORM_JOBS+=("storm-$i"); done; fi
}
# summary sums the storm jobs' group summaries.
summary() {
  local j
  for j in "${STORM_JOBS[@]}"; do curl -sf "$http/v1/job/$j/summary" | jq -c '.Summary.g'; done |
    jq -sc 'reduce .[] as $s ({}; reduce ($s | keys[]) as $k (.; .[$k] += $s[$k]))'
}
# storm_list GETs path (allocations or evaluations) of every storm job, as one array.
storm_list() { local j; for j in "${STORM_JOBS[@]}"; do curl -sf "$http/v1/job/$j/$1"; done | jq -sc 'add'; }
nodes_in() { curl -sf "$http/v1/nodes" | jq "[.[] | select(.Status == \"$1\")] | length"; }

# start_storm_job starts the cluster with nodes sized for exactly $per
# tasks of 200 MHz / 200 MB each, registers the storm jobs of $total
# allocations and waits until all run. The jobs go in one at a time, each
# once the one before runs: on two cores, placing 100,000 allocations at
# once starves the nodes' heartbeats (benchmarks.md, "Reconnect storm:
# 10,000 nodes").
start_storm_job() { # nodes per
  local n=$1 per=$2 total=$(($1 * $2))
  start_cluster "$n" -cpu $((200 * per)) -memory $((200 * per + 48))
  storm_jobs_for "$total"
  local job id left=$total count placed=0
  for id in "${STORM_JOBS[@]}"; do
    count=$((left < 10000 ? left : 10000)); left=$((left - count)); placed=$((placed + count))
    job=$(jq -cn --arg id "$id" --arg c "$count" '{Job: {ID: $id, Name: $id, Type: "service", Datacenters: ["dc1"],
      TaskGroups: [{Name: "g", Count: ($c|tonumber), MaxClientDisconnect: 3600000000000, EphemeralDisk: {SizeMB: 10},
        Tasks: [{Name: "t", Driver: "mock_driver", Config: {}, Resources: {CPU: 200, MemoryMB: 200}}]}]}}')
    curl -sf -XPUT "$http/v1/jobs" -d "$job" > /dev/null
    wait_for "$placed allocations running" 900 "[ \"\$(summary | jq .Running)\" = $placed ]"
    if [ -n "${SIM_TRACE:-}" ]; then echo "$(date +%T) $id: $placed running" >&2; fi
  done
}

flap() {
  local n=${1:-1000} per=${2:-10}
  local total=$((n * per))
  start_storm_job "$n" "$per"
  local pid before evals0 idx0 c0 t0
  pid=$(leader_pid); before=$(storm_list allocations | jq length)
  evals0=$(storm_list evaluations | jq length); idx0=$(raft_index); c0=$(cpu_ticks "$pid")
  curl -sf "$(leader_http)/v1/agent/pprof/profile?seconds=30" > "$SIM_WORK/leader-flap.pprof" &
  t0=$(now)
  curl -sf -XPOST "$ctl/v1/sim/flap?fraction=0.2&period=5s&for=60s" > /dev/null
  sleep 60
  local c1 t1; c1=$(cpu_ticks "$pid"); t1=$(now)
  local t_conv=""
  while [ -z "$t_conv" ]; do
    [ "$(nodes_in ready)" = "$n" ] && [ "$(summary | jq '.Running == '$total' and .Unknown == 0')" = true ] \
      && [ "$(sim_status | jq .Silenced)" = 0 ] && t_conv=$(echo "$(now) - $t1" | bc -l)
    if (( $(echo "$(now) - $t1 > 300" | bc) )); then echo "not converged in 300 s: $(summary)" >&2; exit 1; fi
    sleep 0.2
  done
  wait %2 2>/dev/null || true
  local s after evals1 idx1
  s=$(sim_status); after=$(storm_list allocations | jq length)
  evals1=$(storm_list evaluations | jq length); idx1=$(raft_index)
  local triggers
  triggers=$(storm_list evaluations | jq -c "[.[] | select(.CreateIndex > $idx0)] | group_by(.TriggeredBy) | map({(.[0].TriggeredBy): length}) | add")
  jq -cn --argjson s "$s" --arg n "$n" --arg total "$total" --arg conv "$t_conv" \
    --arg extra "$((after - before))" --arg evals "$((evals1 - evals0))" --arg raft "$((idx1 - idx0))" \
    --arg cpu "$(echo "($c1 - $c0) / $hz / ($t1 - $t0) * 100" | bc -l)" --argjson trig "${triggers:-null}" \
    '{mode: "flap", nodes: ($n|tonumber), allocs: ($total|tonumber), converged_after_s: ($conv|tonumber*100|round/100),
      restarts: $s.Restarts, task_stops: $s.Stops, extra_allocs: ($extra|tonumber), evals: ($evals|tonumber), evals_by_trigger: $trig,
      raft_entries: ($raft|tonumber), leader_cpu_pct_during: ($cpu|tonumber*10|round/10)}'
}

storm() {
  local n=${1:-1000} per=${2:-10}
  local total=$((n * per))
  start_storm_job "$n" "$per"
  local before; before=$(storm_list allocations | jq length)
  curl -sf -XPOST "$ctl/v1/sim/silence?fraction=1" > /dev/null
  wait_for "every node disconnected and every allocation unknown" 600 \
    "[ \"\$(nodes_in disconnected)\" = $n ] && [ \"\$(summary | jq .Unknown)\" = $total ]"
  local pid; pid=$(leader_pid)
  local evals0 idx0 c0 all0 sim0; evals0=$(storm_list evaluations | jq length); idx0=$(raft_index); c0=$(cpu_ticks "$pid")
  all0=$(servers_ticks); sim0=$(cpu_ticks "$(cat "$SIM_WORK/sim.pid")")
  curl -sf "$(leader_http)/v1/agent/pprof/profile?seconds=10" > "$SIM_WORK/leader-storm.pprof" &
  curl -sf "$ctl/debug/pprof/profile?seconds=10" > "$SIM_WORK/sim-storm.pprof" &
  local t0; t0=$(now)
  curl -sf -XPOST "$ctl/v1/sim/return" > /dev/null
  local t_ready="" t_running=""
  while [ -z "$t_ready" ] || [ -z "$t_running" ]; do
    local ready; ready=$(nodes_in ready)
    [ -n "${SIM_TRACE:-}" ] && echo "$(echo "$(now) - $t0" | bc -l | cut -c1-5)s ready $ready $(summary)" >&2
    [ -z "$t_ready" ] && [ "$ready" = "$n" ] && t_ready=$(echo "$(now) - $t0" | bc -l)
    [ -z "$t_running" ] && [ "$(summary | jq '.Running == '$total' and .Unknown == 0')" = true ] && t_running=$(echo "$(now) - $t0" | bc -l)
    if (( $(echo "$(now) - $t0 > 300" | bc) )); then echo "not converged in 300 s: $(summary)" >&2; exit 1; fi
    sleep 0.1
  done
  sleep 5 # let stragglers (a late plan, a stop) show
  local c1 all1 sim1; c1=$(cpu_ticks "$pid"); all1=$(servers_ticks); sim1=$(cpu_ticks "$(cat "$SIM_WORK/sim.pid")")
  wait %2 %3 2>/dev/null || true
  local s after evals1 idx1 triggers statuses
  s=$(sim_status); after=$(storm_list allocations | jq length)
  evals1=$(storm_list evaluations | jq length); idx1=$(raft_index)
  triggers=$(storm_list evaluations | jq -c "[.[] | select(.CreateIndex > $idx0)] | group_by(.TriggeredBy) | map({(.[0].TriggeredBy): length}) | add")
  statuses=$(storm_list evaluations | jq -c "[.[] | select(.CreateIndex > $idx0)] | group_by(.Status) | map({(.[0].Status): length}) | add")
  jq -cn --argjson s "$s" --arg n "$n" --arg total "$total" --arg ready "$t_ready" --arg running "$t_running" \
    --arg extra "$((after - before))" --arg evals "$((evals1 - evals0))" --arg raft "$((idx1 - idx0))" \
    --arg cpu "$(echo "($c1 - $c0) / $hz" | bc -l)" --arg fcpu "$(echo "($all1 - $all0 - $c1 + $c0) / $hz" | bc -l)" \
    --arg scpu "$(echo "($sim1 - $sim0) / $hz" | bc -l)" --argjson trig "${triggers:-null}" --argjson stat "${statuses:-null}" \
    '{mode: "storm", nodes: ($n|tonumber), allocs: ($total|tonumber), all_ready_s: ($ready|tonumber*100|round/100),
      all_running_s: ($running|tonumber*100|round/100), restarts: $s.Restarts, task_stops: $s.Stops,
      extra_allocs: ($extra|tonumber), evals: ($evals|tonumber), evals_by_trigger: $trig, evals_by_status: $stat, raft_entries: ($raft|tonumber),
      leader_cpu_s: ($cpu|tonumber*10|round/10), followers_cpu_s: ($fcpu|tonumber*10|round/10), sim_cpu_s: ($scpu|tonumber*10|round/10)}'
}

# follower_http is the HTTP address of a server that does not lead, for
# polls that must not load the leader they measure.
follower_http() {
  local addr port i
  addr=$(leader_addr); port=${addr##*:}
  for i in 0 1 2; do
    [ $((SIM_BASE_PORT + 10 * i + 1)) = "$port" ] || { echo "http://127.0.0.1:$((SIM_BASE_PORT + 10 * i))"; return; }
  done
}

detect() {
  local n=${1:-10000} frac=${2:-0.01}
  # The nodes are spread over 1/frac datacenters, dc0 the one cut off; a
  # job of one allocation on each node of dc0 (distinct hosts, one-hour
  # disconnect window) gives the cut nodes something that may reconnect,
  # so they go disconnected rather than down. The other nodes hold
  # nothing: placing thousands of allocations would measure the
  # scheduler, not detection.
  local dcs k0 i
  dcs=$(echo "1 / $frac" | bc); k0=$(( (n + dcs - 1) / dcs ))
  local list=""; for i in $(seq 0 $((dcs - 1))); do list+="dc$i,"; done
  start_cluster "$n" -datacenter "${list%,}"
  local job
  job=$(jq -cn --arg c "$k0" '{Job: {ID: "detect", Name: "detect", Type: "service", Datacenters: ["dc0"],
    Constraints: [{Operand: "distinct_hosts", RTarget: "true"}],
    TaskGroups: [{Name: "g", Count: ($c|tonumber), MaxClientDisconnect: 3600000000000, EphemeralDisk: {SizeMB: 10},
      Tasks: [{Name: "t", Driver: "mock_driver", Config: {}, Resources: {CPU: 100, MemoryMB: 64}}]}]}}')
  curl -sf -XPUT "$http/v1/jobs" -d "$job" > /dev/null
  wait_for "$k0 allocations running" 600 "[ \"\$(curl -sf $http/v1/job/detect/summary | jq .Summary.g.Running)\" = $k0 ]"
  sleep "${SETTLE:-60}"
  local pid poll; pid=$(leader_pid); poll=$(follower_http)
  local t0 c0; t0=$(now); c0=$(cpu_ticks "$pid")
  sleep "${WINDOW:-120}"
  local t1 c1; t1=$(now); c1=$(cpu_ticks "$pid")
  local cut; cut=$(now)
  curl -sf -XPOST "$ctl/v1/sim/silence?datacenter=dc0" > /dev/null
  curl -sf "$ctl/v1/sim/silenced" | jq -c '.NodeIDs' > "$SIM_WORK/silenced.json"
  local k; k=$(jq length "$SIM_WORK/silenced.json")
  echo '[]' > "$SIM_WORK/not-ready.json"
  local filter='Status%20!%3D%20%22ready%22' done_at="" last
  while :; do
    curl -sf "$poll/v1/nodes?stale=true&filter=$filter" | jq -c '[.[] | {ID, Status}]' > "$SIM_WORK/poll.json" || echo '[]' > "$SIM_WORK/poll.json"
    jq -c -s '(.[0] + [.[1][].ID]) | unique' "$SIM_WORK/not-ready.json" "$SIM_WORK/poll.json" > "$SIM_WORK/nr.tmp" && mv "$SIM_WORK/nr.tmp" "$SIM_WORK/not-ready.json"
    last=$(jq --slurpfile s "$SIM_WORK/silenced.json" '[.[] | select(.Status == "disconnected" and (.ID | IN($s[0][])))] | length' "$SIM_WORK/poll.json")
    [ -z "$done_at" ] && [ "$last" = "$k" ] && done_at=$(now) && c2=$(cpu_ticks "$pid")
    [ -n "$done_at" ] && (( $(echo "$(now) - $done_at > ${HOLD:-30}" | bc) )) && break
    if (( $(echo "$(now) - $cut > 600" | bc) )); then echo "silenced nodes not all disconnected in 600 s: $last of $k" >&2; exit 1; fi
    sleep 1
  done
  local took=() id ts
  for id in $(jq -r '.[]' "$SIM_WORK/silenced.json"); do
    ts=$(curl -sf "$poll/v1/node/$id?stale=true" | jq -r '[.Events[] | select(.Message == "Node heartbeat missed")] | last | .Timestamp')
    took+=("$(echo "$(date -d "$ts" +%s.%N) - $cut" | bc -l)")
  done
  local fp; fp=$(jq -c --slurpfile s "$SIM_WORK/silenced.json" '[.[] | select(IN($s[0][]) | not)] | length' "$SIM_WORK/not-ready.json")
  printf '%s\n' "${took[@]}" | sort -n > "$SIM_WORK/took.txt"
  jq -cn --arg n "$n" --arg k "$k" --arg fp "$fp" --rawfile took "$SIM_WORK/took.txt" \
    --arg cpu "$(echo "($c1 - $c0) / $hz / ($t1 - $t0) * 100" | bc -l)" \
    --arg dcpu "$(echo "($c2 - $c1) / $hz / ($done_at - $cut) * 100" | bc -l)" --arg rss "$(rss_mib "$pid")" \
    --arg sessions "${SIM_SESSIONS:-true}" \
    '($took | split("\n") | map(select(. != "") | tonumber)) as $t |
     {mode: "detect", nodes: ($n|tonumber), sessions: ($sessions == "true"), silenced: ($k|tonumber),
      disconnected_after_s: {min: ($t|min*10|round/10), median: ($t[($t|length/2|floor)]*10|round/10), max: ($t|max*10|round/10)},
      false_positives: ($fp|tonumber), leader_cpu_pct_steady: ($cpu|tonumber*10|round/10),
      leader_cpu_pct_detecting: ($dcpu|tonumber*10|round/10), leader_rss_mib: ($rss|tonumber)}'
}

"$mode" "${@:2}"
echo "profiles and logs in $SIM_WORK" >&2
