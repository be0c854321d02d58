#!/usr/bin/env bash
# Run the test stages and print how long each took. Usage: run-tests.sh [stage ...]
# Stages: setup lint sanity units targets build bench ee molecule (default: all, in that order). Expects the venv on PATH and
# ANSIBLE_COLLECTIONS_PATH set (the Makefile does both). MOLECULE_SCENARIOS="a b" limits the molecule stage to
# those scenarios (default: every molecule/*/molecule.yml).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=tools/cpu-times.sh
. "$repo/tools/cpu-times.sh"

# The host set-up, proven in a clean container: every tool the tooling calls is installed by it and runs.
stage_setup() {
  "$repo/tools/check-host-setup.sh"
}

stage_lint() {
  shellcheck .ci/run tools/*.sh tests/simulator/fake-installer.sh
  yamllint --strict .
  ansible-lint --profile production --strict
  python tools/role_docs.py --check
}

stage_sanity() {
  "$repo/tools/sanity.sh"
}

stage_units() {
  pytest -q
}

# What runs on the managed hosts, under the other Pythons they have (tools/build-python-images.sh): Python 3.9 (Debian
# 11; openEuler 22.03 and Kylin V10 ship it) and 3.13 (Debian 13, newer than any target, so nothing the targets between
# them have was removed). On each: ansible-test's own compile check of every module, module_utils and simulator file,
# then the unit tests of the modules and module_utils, with ansible-core's module_utils mounted as Ansible ships them to
# a host. The plugins that run only on the controller (Python 3.11 or newer, as ansible-core 2.19 needs) are left out:
# the network plan (a filter, netaddr), the benchmark report (delegated to localhost, matplotlib) and the fleet plan
# (delegated to localhost; its tests read the role's defaults with PyYAML).
controller_only=(plugins/module_utils/ascend/_network_plan.py plugins/module_utils/operations/_benchmark_report.py
  plugins/modules/benchmark_report.py tests/unit/plugins/module_utils/ascend/test__network_plan.py
  tests/unit/plugins/module_utils/operations/test__benchmark_report.py tests/unit/plugins/modules/test_benchmark_report.py
  plugins/module_utils/operations/_fleet_plan.py plugins/modules/fleet_plan.py
  tests/unit/plugins/module_utils/operations/test__fleet_plan.py tests/unit/plugins/modules/test_fleet_plan_module.py)
stage_targets() {
  local site image ignore=() file
  site=$(python -c 'import ansible, os; print(os.path.dirname(ansible.__file__))')
  for file in "${controller_only[@]}"; do ignore+=(--ignore "$file"); done
  # The shared reference data the tests read (tests/shared_data.py), read-only in the containers too.
  local shared=${KAV_SHARED_DIR:-$(dirname "$repo")/shared} shared_mount=()
  [ -d "$shared" ] && shared_mount=(-v "$shared:$shared:ro" -e "KAV_SHARED_DIR=$shared")
  for image in localhost/python39-ci:bullseye localhost/python313-ci:trixie; do
    podman image exists "$image" || { echo "run-tests: $image is missing: run make images" >&2; return 1; }
    echo "--- $(podman run --rm "$image" python3 --version)"
    local -a run=(podman run --rm --network none -e CI=true -e PYTHONDONTWRITEBYTECODE=1 "${shared_mount[@]}"
      -e "PYTHONPATH=/opt/ansible-target:$repo/.cache" -v "$repo:$repo:ro"
      -v "$site/module_utils:/opt/ansible-target/ansible/module_utils:ro"
      -v "$site/../ansible_test/_util/target/sanity/compile:/opt/compile:ro" -w "$repo" "$image")
    local errors
    errors=$(git ls-files --cached --others --exclude-standard 'plugins/modules/*.py' 'plugins/module_utils/*.py' 'tests/simulator/*.py' \
        tests/simulator/ascend-sim tests/simulator/fake-engine tests/simulator/fake-vllm |
      grep -vxF -f <(printf '%s\n' "${controller_only[@]}") | "${run[@]}" python3 /opt/compile/compile.py)
    if [ -n "$errors" ]; then echo "$errors"; echo "run-tests: the files above do not compile on $image" >&2; return 1; fi
    # A deprecation is an error: what a newer Python warns about, the next one removes.
    "${run[@]}" /opt/pytest/bin/python -m pytest -q -p no:cacheprovider -W error::DeprecationWarning "${ignore[@]}" \
      tests/unit/plugins/module_utils tests/unit/plugins/modules
  done
}

# The collection must build, install with ansible-galaxy, and its modules must run from the install.
stage_build() (
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  ansible-galaxy collection build --force --output-path "$tmp/dist" . >/dev/null
  tarball=$(ls "$tmp"/dist/kunpeng_ascend-vllm-*.tar.gz)
  echo "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"
  ANSIBLE_COLLECTIONS_PATH=$tmp/collections \
    ansible-galaxy collection install --force --offline --no-deps -p "$tmp/collections" "$tarball" >/dev/null
  # From the install: the main playbook must parse, and its read-only health play runs against this machine's
  # simulated npu-smi (scratch root). Never the whole site.yml here: it would tune and install on this machine.
  ANSIBLE_COLLECTIONS_PATH=$tmp/collections ansible-playbook -i localhost, --syntax-check kunpeng_ascend.vllm.site >/dev/null
  root=$tmp/root
  mkdir -p "$root/usr/local/Ascend/driver" "$tmp/bin"
  printf 'Version=24.1.rc1\n' > "$root/usr/local/Ascend/driver/version.info"
  ln -s "$repo/tests/simulator/ascend-sim" "$tmp/bin/npu-smi"
  printf 'ascend_nodes:\n  hosts:\n    localhost:\n      ansible_connection: local\n' > "$tmp/hosts.yml"
  export ASCEND_SIM_ROOT=$root ASCEND_SIM_STATE=$tmp/state.json ASCEND_SIM_LOG=$tmp/calls.log
  "$repo/tests/simulator/ascend-sim" init --profile 910b-8 >/dev/null
  PATH=$tmp/bin:$PATH ANSIBLE_COLLECTIONS_PATH=$tmp/collections ANSIBLE_PYTHON_INTERPRETER=$(command -v python) \
    ansible-playbook -i "$tmp/hosts.yml" kunpeng_ascend.vllm.health > "$tmp/out.txt" || {
      cat "$tmp/out.txt"; echo "the installed collection's health playbook failed" >&2; return 1; }
  grep -q '8 NPUs, 8 chips' "$tmp/out.txt" || {
    cat "$tmp/out.txt"; echo "the installed collection did not report 8 NPUs" >&2; return 1; }
  echo "the installed collection: kunpeng_ascend.vllm.site parses, kunpeng_ascend.vllm.health reported 8 NPUs, 8 chips"
)

# Every benchmark once, on a tiny input, so that none can rot unnoticed: not timed, not asserted on, only run
# (`make bench`'s scripts; `make bench-fleet` on two nodes under Mitogen). `make bench-serving` runs in scenario
# vllm_benchmark, against its real service (molecule/vllm_benchmark/verify_benchmark.yml).
stage_bench() {
  python tests/benchmarks/npu_smi_calls.py
  python tests/benchmarks/model_manifest_reverify.py --shards 2 --shard-mib 16
  BENCH_FLEET_NODES=2 BENCH_FLEET_STRATEGY=mitogen "$repo/tools/bench-fleet.sh"
}

# The execution environment (docs/execution-environment.md): ansible-builder builds it with podman from the
# locally built base image (no registry, no index: a cached wheelhouse), then the installed collection's health
# playbook runs inside it against a simulated node and must report 8 NPUs. Cached: an unchanged checkout rebuilds
# nothing; a changed collection rebuilds the layers from the collection on.
stage_ee() {
  "$repo/tools/build-ee.sh"
}

# The scenarios run in lanes side by side (MOLECULE_LANES, 3), longest first: a lane that is free takes the next
# scenario no lane has taken, so the lanes end about together however the scenarios' times change (longest-first list
# scheduling). Three lanes on two cores, because the scenarios spend much of their time waiting (a vLLM start, a
# health gate, a stop timeout, podman) rather than computing; while the other stages of `make test` run beside them,
# one lane waits for those to end. scenario_order is the order, from their times in CI (docs/testing.md); a scenario
# it does not name runs after those it names. Each scenario's output goes to .cache/molecule/<scenario>.log and is
# printed in full if it fails.
scenario_order="vllm vllm_benchmark site multinode_vllm multinode rolling_update model_quantize vllm_container upgrade simulator
  npu_driver modules doctor cann os_tuning"
molecule_lane_count=${MOLECULE_LANES:-3}
stage_molecule() {
  molecule_queue && molecule_lanes 1 "$molecule_lane_count" && molecule_report
}

# The scenarios to run, in order, into .cache/molecule/queue; the logs and results of an earlier run removed.
molecule_queue() {
  local logs=$repo/.cache/molecule scenario file
  local -a queue=() all=()
  [[ $molecule_lane_count =~ ^[1-9][0-9]*$ ]] ||
    { echo "run-tests: MOLECULE_LANES must be a whole number, 1 or more; got '$molecule_lane_count'" >&2; return 2; }
  mkdir -p "$logs"
  rm -rf "$logs"/*.log "$logs"/*.result "$logs"/*.times "$logs/taken" "$logs/queue"
  mkdir "$logs/taken"
  for file in molecule/*/molecule.yml; do all+=("$(basename "$(dirname "$file")")"); done
  for scenario in $scenario_order "${all[@]}"; do
    [ -f "molecule/$scenario/molecule.yml" ] || continue
    [[ " ${queue[*]} " != *" $scenario "* ]] || continue
    if [ -n "${MOLECULE_SCENARIOS:-}" ] && [[ " $MOLECULE_SCENARIOS " != *" $scenario "* ]]; then
      continue
    fi
    queue+=("$scenario")
  done
  [ "${#queue[@]}" -gt 0 ] || { echo "run-tests: no scenario matches '${MOLECULE_SCENARIOS:-}'" >&2; return 1; }
  echo "${queue[*]}" > "$logs/queue"
  echo "molecule: $molecule_lane_count lanes take, longest first: ${queue[*]}; logs in .cache/molecule/"
}

# Lanes FIRST to LAST over the queue, until every scenario was taken and ran.
molecule_lanes() {
  local lane pid
  local -a queue=() pids=()
  read -r -a queue < "$repo/.cache/molecule/queue"
  for lane in $(seq "$1" "$2"); do
    run_lane "$lane" "${queue[@]}" &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "$pid" || true; done
}

# Each scenario's time, and the whole log of each one that failed.
molecule_report() {
  local logs=$repo/.cache/molecule failed=0 result scenario rc seconds
  for result in "$logs"/*.result; do
    [ -e "$result" ] || continue
    read -r scenario rc seconds cpu < "$result"
    timings+=("molecule:$scenario $seconds s (controller CPU ${cpu:-?} s)")
    if [ "$rc" != 0 ]; then
      failed=1
      printf '\n=== molecule %s FAILED (rc %s): its log ===\n' "$scenario" "$rc"
      cat "$logs/$scenario.log"
    fi
  done
  return "$failed"
}

# One lane: each scenario of the queue that no other lane took yet (mkdir is atomic: one lane gets it), one after
# another; each one's result (name, return code, seconds) goes to <scenario>.result.
run_lane() {
  local lane=$1 scenario start rc logs=$repo/.cache/molecule
  shift
  for scenario in "$@"; do
    mkdir "$logs/taken/$scenario" 2>/dev/null || continue
    start=$SECONDS
    echo "molecule: $scenario started (lane $lane)"
    rc=0
    # NO_COLOR: plain text in the log files (Molecule colours its output whenever TERM says xterm).
    # The subshell's `times` at its end: the CPU of the controller's side of the scenario (Molecule, Ansible, what
    # they run here); the nodes' processes run under podman's conmon, not under this shell, and are not in it.
    (trap 'times > "$logs/$scenario.times"' EXIT; NO_COLOR=1 molecule test -s "$scenario") > "$logs/$scenario.log" 2>&1 ||
      rc=$?
    echo "$scenario $rc $((SECONDS - start)) $(children_cpu < "$logs/$scenario.times" 2>/dev/null || echo '?')" > "$logs/$scenario.result"
    echo "molecule: $scenario $([ "$rc" = 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s (lane $lane)"
  done
}

# The machine's CPU seconds so far, busy and in all (every CPU's user, nice, system, irq and softirq time, then with
# idle and iowait), from the first line of /proc/stat in clock ticks.
machine_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { busy = $2 + $3 + $4 + $7 + $8; printf "%.0f %.0f", busy / hz, (busy + $5 + $6) / hz; exit }' /proc/stat
}

# The durations are printed at the end, also when a stage fails. Beside each stage's wall time, the CPU its side used
# (containers not counted); at the end, how busy the machine's CPUs were over the run: where that is near 100 %, the
# run is bound by CPU, and only less CPU work (not more side by side) makes it shorter.
print_durations() {
  local busy_end all_end
  printf '\n=== stage durations ===\n'
  [ "${#timings[@]}" -eq 0 ] || printf '%s\n' "${timings[@]}"
  [ "${#failed_stages[@]}" -eq 0 ] || echo "FAILED: ${failed_stages[*]}"
  printf 'total %s s\n' "$((SECONDS - total_start))"
  read -r busy_end all_end <<<"$(machine_cpu)"
  awk -v busy=$((busy_end - busy_start)) -v all=$((all_end - all_start)) -v cpus="$(nproc)" 'BEGIN {
    share = all > 0 ? 100 * busy / all : 0
    printf "machine CPU: %d s busy of %d s (%d CPUs over the run), %.0f %%, containers included\n", busy, all, cpus, share }'
}

stages=("$@")
[ "${#stages[@]}" -gt 0 ] || stages=(setup lint sanity units targets build bench ee molecule)
for stage in "${stages[@]}"; do
  declare -F "stage_$stage" >/dev/null || { echo "run-tests: unknown stage '$stage'" >&2; exit 2; }
done
timings=()
failed_stages=()
total_start=$SECONDS
read -r busy_start all_start <<<"$(machine_cpu)"
trap print_durations EXIT

# With other stages, the Molecule lanes start first and run beside them: the lanes wait on their nodes much of the
# time (a vLLM start, a health gate, podman), which the other stages' CPU work fills. SERIAL=1 runs them in order.
molecule_pid=
if [ "${#stages[@]}" -gt 1 ] && [[ " ${stages[*]} " == *" molecule "* ]] && [ "${SERIAL:-0}" != 1 ]; then
  printf '\n=== stage molecule (beside the other stages; its lines start with "molecule:") ===\n'
  molecule_start=$SECONDS
  molecule_queue || { failed_stages+=(molecule); exit 1; }
  # One lane waits for the other stages (with a single lane, none does).
  molecule_held=$((molecule_lane_count > 1 ? 1 : 0))
  molecule_lanes 1 $((molecule_lane_count - molecule_held)) &
  molecule_pid=$!
  remaining=()
  for stage in "${stages[@]}"; do [ "$stage" = molecule ] || remaining+=("$stage"); done
  stages=("${remaining[@]}")
fi

# A failing stage stops the stages after it (the lanes already running finish, and are reported).
for stage in "${stages[@]}"; do
  printf '\n=== stage %s ===\n' "$stage"
  start=$SECONDS
  rc=0
  if [ "$stage" = molecule ]; then
    # In this shell: the report adds each scenario's time.
    stage_molecule || rc=$?
  else
    # A subshell of its own stops at the stage's first failing command (set -e), which a stage tested by if or ||
    # would not.
    ( trap 'times > "$repo/.cache/stage-$stage.times"' EXIT; "stage_$stage" ) &
    wait "$!" || rc=$?
  fi
  # The molecule stage's scenarios give their own CPU (molecule_report).
  cpu=
  if [ "$stage" != molecule ]; then
    cpu=" (CPU $(children_cpu < "$repo/.cache/stage-$stage.times" 2>/dev/null || echo '?') s)"
    rm -f "$repo/.cache/stage-$stage.times"
  fi
  if [ "$rc" = 0 ]; then
    timings+=("$stage $((SECONDS - start)) s$cpu")
  else
    timings+=("$stage FAILED after $((SECONDS - start)) s")
    failed_stages+=("$stage")
    break
  fi
done

if [ -n "$molecule_pid" ]; then
  if [ "$molecule_held" = 1 ]; then
    echo "molecule: the other stages ended, lane $molecule_lane_count starts"
    molecule_lanes "$molecule_lane_count" "$molecule_lane_count"
  fi
  lanes_rc=0
  wait "$molecule_pid" || lanes_rc=$?
  printf '\n=== stage molecule: done ===\n'
  if [ "$lanes_rc" = 0 ] && molecule_report; then
    timings+=("molecule $((SECONDS - molecule_start)) s")
  else
    timings+=("molecule FAILED after $((SECONDS - molecule_start)) s")
    failed_stages+=(molecule)
  fi
fi
[ "${#failed_stages[@]}" -eq 0 ]
