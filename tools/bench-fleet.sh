#!/usr/bin/env bash
# Fleet scale of Ansible itself: playbooks/site.yml on one simulated Ascend node and on a fleet of them (8 by
# default), in the same run, and the ratio of the two wall times (the goal: at most 2x). Every node is a light
# x86_64 container with systemd as PID 1 (as in Molecule's scenarios), made a simulated Ascend 910B node by
# molecule/shared/node.yml with the settings of `make demo` (inventories/demo/group_vars): OS tuning, the NPU driver
# and firmware, CANN, the health report and the container engine (the simulator's docker stand-in). The vLLM
# service is skipped (--skip-tags vllm_service) unless BENCH_FLEET_SERVE=1: it starts the simulator's stand-in vLLM
# in container mode, no model needed. Ansible runs plain (the linear strategy) through a pipelining podman
# connection, as users of ssh with pipelining run it, or under Mitogen (BENCH_FLEET_STRATEGY=mitogen: its
# mitogen_linear strategy and the connection `podman`, the short name Mitogen takes over, as in Molecule's
# scenarios and the demo); forks are at least the fleet's size. Each site.yml run is timed twice, on fresh nodes
# (everything to install) and again on the converged nodes (nothing to change), and the fleet's first run is
# profiled (ansible.posix.profile_tasks): its slowest tasks are printed at the end. It asserts nothing: it prints
# numbers (the exit status is non-zero only when a run fails).
#
# Usage: bench-fleet.sh
# Environment: BENCH_FLEET_NODES (8) the fleet's size; BENCH_FLEET_FORKS (the fleet's size, at least 8);
# BENCH_FLEET_SERVE=1 runs the vLLM play too; BENCH_FLEET_PLAYBOOK (playbooks/site.yml) the playbook to time, e.g.
# an older copy to compare; BENCH_FLEET_KEEP=1 leaves the containers up; BENCH_FLEET_TOP (15) how many of the
# slowest tasks to print; BENCH_FLEET_STRATEGY (linear) linear for plain Ansible, or mitogen. Logs: .cache/bench-fleet/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=tools/cpu-times.sh
. "$repo/tools/cpu-times.sh"
nodes=${BENCH_FLEET_NODES:-8}
forks=${BENCH_FLEET_FORKS:-$((nodes > 8 ? nodes : 8))}
top=${BENCH_FLEET_TOP:-15}
playbook=${BENCH_FLEET_PLAYBOOK:-playbooks/site.yml}
image=localhost/debian-amd64-ci:bookworm
logs=$repo/.cache/bench-fleet
case $nodes in
  '' | *[!0-9]* | 0 | 1) echo "bench-fleet: BENCH_FLEET_NODES must be a whole number of 2 or more, not '$nodes'" >&2; exit 2 ;;
esac
case $forks in
  '' | *[!0-9]* | 0) echo "bench-fleet: BENCH_FLEET_FORKS must be a whole number of 1 or more, not '$forks'" >&2; exit 2 ;;
esac
strategy=${BENCH_FLEET_STRATEGY:-linear}
case $strategy in
  linear) connection=podman_pipelined mode="plain Ansible, linear strategy" ;;
  # Mitogen takes over a connection by its short name only: `podman`, not podman_pipelined nor the full name.
  mitogen) connection=podman mode="Mitogen, mitogen_linear strategy" ;;
  *) echo "bench-fleet: BENCH_FLEET_STRATEGY must be linear or mitogen, not '$strategy'" >&2; exit 2 ;;
esac
work=$(mktemp -d)

# f-fleet-0 is the single node; f-fleet-1 .. f-fleet-N the fleet: every run starts from nodes in the same state.
names=()
for i in $(seq 0 "$nodes"); do names+=("f-fleet-$i"); done

cleanup() {
  if [ "${BENCH_FLEET_KEEP:-0}" = 1 ]; then
    echo "bench-fleet: the nodes stay up (BENCH_FLEET_KEEP=1); remove them with: podman rm --force ${names[*]}"
  else
    podman rm --force --time 5 "${names[@]}" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

export ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$repo/.cache}
# As in Molecule's scenarios: the collections of that path only, not the hundred of the venv's ansible package, which
# Mitogen would list for each module it runs (a fleet's controller has the collections it uses).
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
export ANSIBLE_CONNECTION_PLUGINS=$repo/molecule/shared/plugins/connection
export ANSIBLE_PIPELINING=true ANSIBLE_FORKS=$forks
if [ "$strategy" = mitogen ]; then
  # Mitogen's strategy from the mitogen package requirements.txt pins, as the scenarios load it.
  export ANSIBLE_STRATEGY_PLUGINS=$repo/molecule/shared/plugins/strategy ANSIBLE_STRATEGY=mitogen_linear
else
  export ANSIBLE_STRATEGY=linear
fi
export ANSIBLE_FORCE_COLOR=false ANSIBLE_DISPLAY_SKIPPED_HOSTS=false ANSIBLE_HOST_KEY_CHECKING=false
export PROFILE_TASKS_TASK_OUTPUT_LIMIT=$top
mkdir -p "$logs"

# The inventory: the demo's group settings for every node, x86_64 packages (a host variable: the group file says
# aarch64), two groups to limit the runs to.
mkdir -p "$work/group_vars"
cp inventories/demo/group_vars/ascend_nodes.yml "$work/group_vars/ascend_nodes.yml"
{
  echo "---"
  echo "all:"
  echo "  vars:"
  echo "    ansible_connection: $connection"
  echo "    ansible_python_interpreter: /usr/bin/python3"
  echo "ascend_nodes:"
  echo "  children:"
  echo "    single:"
  echo "      hosts:"
  echo "        f-fleet-0: {demo_package_arch: x86-64}"
  echo "    fleet:"
  echo "      hosts:"
  for name in "${names[@]:1}"; do echo "        $name: {demo_package_arch: x86-64}"; done
} >"$work/hosts.yml"

serve_args=(--skip-tags vllm_service)
if [ "${BENCH_FLEET_SERVE:-0}" = 1 ]; then
  serve_args=()
fi

if ! podman image exists "$image"; then
  echo "bench-fleet: the image $image is missing: run make images" >&2
  exit 1
fi
start_all=$SECONDS
echo "### Ansible: $mode, $forks forks, connection $connection"
echo "### Starting ${#names[@]} x86_64 nodes ($image, systemd as PID 1): ${names[*]}"
podman rm --force --time 5 "${names[@]}" >/dev/null 2>&1 || true
for name in "${names[@]}"; do
  podman run --detach --name "$name" --hostname "$name" --arch amd64 --systemd=always "$image" >/dev/null
done

echo "### Making them simulated Ascend 910B nodes (molecule/shared/node.yml, $mode, $forks forks)"
# node.yml waits for each node's systemd itself.
ansible-playbook -i "$work/hosts.yml" molecule/shared/node.yml >"$logs/node.log" 2>&1 || {
  tail -n 40 "$logs/node.log" >&2
  echo "bench-fleet: preparing the nodes failed (see $logs/node.log)" >&2
  exit 1
}
echo "nodes ready in $((SECONDS - start_all)) s"

declare -A took controller_cpu nodes_cpu
# The CPU seconds the containers of a group have used so far (cgroup v1 cpuacct or v2 cpu.stat; ? when unreadable).
nodes_cpu_now() {
  local group=$1 name path total=0 usage
  local -a members
  if [ "$group" = single ]; then members=(f-fleet-0); else members=("${names[@]:1}"); fi
  for name in "${members[@]}"; do
    path=$(podman inspect --format '{{.State.CgroupPath}}' "$name" 2>/dev/null) || { echo '?'; return; }
    if [ -r "/sys/fs/cgroup/cpuacct$path/cpuacct.usage" ]; then
      usage=$(awk '{ printf "%.3f", $1 / 1e9 }' "/sys/fs/cgroup/cpuacct$path/cpuacct.usage")
    elif [ -r "/sys/fs/cgroup$path/cpu.stat" ]; then
      usage=$(awk '$1 == "usage_usec" { printf "%.3f", $2 / 1e6 }' "/sys/fs/cgroup$path/cpu.stat")
    else
      echo '?'; return
    fi
    total=$(awk -v a="$total" -v b="$usage" 'BEGIN { printf "%.3f", a + b }')
  done
  echo "$total"
}

# Time one site.yml run on a group; its output in $logs/<name>.log. Besides the wall time: the CPU time of
# ansible-playbook and its children (the controller: bash's `times` in a subshell) and of the group's containers.
run_site() {
  local name=$1 group=$2 start cpu_before cpu_after
  cpu_before=$(nodes_cpu_now "$group")
  start=$(date +%s.%N)
  if ! (ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks ansible-playbook -i "$work/hosts.yml" --limit "$group" \
        "${serve_args[@]}" "$playbook" >"$logs/$name.log" 2>&1; rc=$?; times >"$work/times"; exit "$rc"); then
    tail -n 40 "$logs/$name.log" >&2
    echo "bench-fleet: site.yml failed on $group (see $logs/$name.log)" >&2
    exit 1
  fi
  took[$name]=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  controller_cpu[$name]=$(children_cpu < "$work/times")
  cpu_after=$(nodes_cpu_now "$group")
  nodes_cpu[$name]=$(awk -v a="$cpu_before" -v b="$cpu_after" 'BEGIN { if (a == "?" || b == "?") print "?"; else printf "%.0f", b - a }')
  echo "$name: ${took[$name]} s (CPU: controller ${controller_cpu[$name]} s, nodes ${nodes_cpu[$name]} s)"
}

# How many times npu-smi ran on the single node so far (the simulator logs every call).
npu_smi_calls() { podman exec f-fleet-0 ascend-sim calls --tool npu-smi --count; }

echo "### site.yml on fresh nodes: 1 node, then $nodes nodes"
run_site single-first single
calls_first=$(npu_smi_calls)
run_site fleet-first fleet
echo "### site.yml again on the converged nodes (nothing to change): 1 node, then $nodes nodes"
run_site single-second single
calls_second=$(($(npu_smi_calls) - calls_first))
run_site fleet-second fleet

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
changed=$(grep -E '^f-fleet-[0-9]+ +: ok=' "$logs/fleet-second.log" | sed -E 's/.* changed=([0-9]+).*/\1/' | awk '{ n += $1 } END { print n + 0 }')

printf '\n### The %d-node fleet against 1 node (%s, %d forks, connection %s; %s)\n' \
  "$nodes" "$mode" "$forks" "$connection" \
  "$([ ${#serve_args[@]} = 0 ] && echo "the whole site.yml" || echo "site.yml without the vLLM service")"
printf '%-26s %9s %9s %7s   %s\n' run "1 node" "$nodes nodes" ratio "CPU s (controller + nodes), 1 node / $nodes nodes"
for run in first second; do
  printf '%-26s %8s s %8s s %6sx   %s + %s / %s + %s\n' "$([ $run = first ] && echo "first (fresh nodes)" || echo "second (converged)")" \
    "${took[single-$run]}" "${took[fleet-$run]}" "$(ratio "${took[single-$run]}" "${took[fleet-$run]}")" \
    "${controller_cpu[single-$run]}" "${nodes_cpu[single-$run]}" "${controller_cpu[fleet-$run]}" "${nodes_cpu[fleet-$run]}"
done
echo "this machine has $(nproc) CPUs (load average $(cut -d' ' -f1-3 /proc/loadavg)): a run cannot take less wall time than its CPU seconds / $(nproc)"
echo "tasks changed on the fleet's second run: $changed (must be 0)"
# Per node, from the fleet's recaps: the tasks that ran (ok, changed included) and were skipped, and the controller's
# CPU seconds divided by the fleet's size.
for run in first second; do
  grep -E '^f-fleet-[0-9]+ +: ok=' "$logs/fleet-$run.log" |
    sed -E 's/.* ok=([0-9]+) .* skipped=([0-9]+) .*/\1 \2/' |
    awk -v run="$run" -v cpu="${controller_cpu[fleet-$run]}" -v n="$nodes" \
      '{ ok += $1; skipped += $2 } END { printf "per node, %s run: %.0f tasks ran, %.0f skipped; controller CPU %.1f s\n", run, ok / n, skipped / n, cpu / n }'
done
echo "npu-smi runs on one node: $calls_first in the first run, $calls_second in the second"
printf '\n### The slowest tasks of the %d-node first run (ansible.posix.profile_tasks; all hosts, the wall time of each task)\n' "$nodes"
# profile_tasks ends with its sorted list: the lines after the last "====" rule.
awk '/^={20,}/ { n = NR } { line[NR] = $0 } END { for (i = n + 1; i <= NR; i++) if (line[i] ~ / -+ [0-9.]+s$/) print line[i] }' \
  "$logs/fleet-first.log"
echo "total $((SECONDS - start_all)) s; logs in $logs"
