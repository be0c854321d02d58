#!/usr/bin/env bash
# Run the test stages and print how long each took. Usage: run-tests.sh [stage ...]
# Stages: setup lint sanity units build molecule (default: all, in that order). Expects the venv on PATH and
# ANSIBLE_COLLECTIONS_PATH set (the Makefile does both).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

# The host set-up, proven in a clean container: every tool the tooling calls is installed by it and runs.
stage_setup() {
  "$repo/tools/check-host-setup.sh"
}

stage_lint() {
  shellcheck .ci/run tools/*.sh
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

stage_molecule() {
  local scenario
  for scenario in molecule/*/molecule.yml; do
    scenario=$(basename "$(dirname "$scenario")")
    local start=$SECONDS
    molecule test -s "$scenario"
    timings+=("molecule:$scenario $((SECONDS - start)) s")
  done
}

stages=("$@")
[ "${#stages[@]}" -gt 0 ] || stages=(setup lint sanity units build molecule)
timings=()
total_start=$SECONDS
for stage in "${stages[@]}"; do
  declare -F "stage_$stage" >/dev/null || { echo "run-tests: unknown stage '$stage'" >&2; exit 2; }
  printf '\n=== stage %s ===\n' "$stage"
  start=$SECONDS
  "stage_$stage"
  timings+=("$stage $((SECONDS - start)) s")
done
printf '\n=== stage durations ===\n'
printf '%s\n' "${timings[@]}"
printf 'total %s s\n' "$((SECONDS - total_start))"
