#!/usr/bin/env bash
# The demo: build a simulated Kunpeng + Ascend 910B node (an arm64 container under qemu, systemd as PID 1, with the
# simulated NPUs and fake Ascend packages), then run playbooks/site.yml against it with the demo inventory, twice:
# the second run must change nothing. At the end: each stage's wall time, and each site.yml run's task and changed
# counts.
#
# Ansible runs under Mitogen (pinned in requirements.txt), as a user may enable it for a fleet: its strategy keeps
# one Python process on the node, where plain Ansible starts Python (under arm64 emulation, seconds) for every task.
# The Molecule scenario `site` proves the same inventory with plain Ansible.
#
# Usage: demo.sh            build the node and run the playbook (the node stays up to be explored)
#        demo.sh --clean    remove the node
# Environment: DEMO_MITOGEN=0 runs plain Ansible; DEMO_ARCH=amd64 builds an x86_64 node instead (to compare).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
node=kunpeng-demo-node
inventory=inventories/demo/hosts.yml
arch=${DEMO_ARCH:-arm64}
logs=$repo/.cache/demo
export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-false} ANSIBLE_CALLBACK_RESULT_FORMAT=yaml
# Progress a person can follow: every task's name and result, without the hosts a task skipped.
export ANSIBLE_DISPLAY_SKIPPED_HOSTS=false

case $arch in
  arm64) package_arch=aarch64 ;;
  amd64) package_arch=x86-64 ;;
  *) echo "demo: DEMO_ARCH must be arm64 or amd64, not '$arch'" >&2; exit 2 ;;
esac
image=localhost/debian-$arch-ci:bookworm

if [ "${1:-}" = --clean ]; then
  podman rm --force --time 5 "$node" >/dev/null 2>&1 || true
  echo "removed $node"
  exit 0
fi

if [ "${DEMO_MITOGEN:-1}" != 0 ]; then
  # How a user enables Mitogen: its strategy plugins, found in the installed package.
  ANSIBLE_STRATEGY_PLUGINS=$(python -c 'import ansible_mitogen, os; print(os.path.join(os.path.dirname(ansible_mitogen.__file__), "plugins", "strategy"))')
  export ANSIBLE_STRATEGY_PLUGINS ANSIBLE_STRATEGY=mitogen_linear
  mode="Mitogen (mitogen_linear)"
  note="ansible-core warns at every run that strategy plugins outside ansible.builtin are deprecated: that is Mitogen's (docs/testing.md, \"Mitogen\")."
else
  mode="plain Ansible"
  note=
fi

stage=0
say() { stage=$((stage + 1)); printf '\n### [%d/5] %s\n' "$stage" "$*"; }
summary=()

# Run a playbook against the node, its output on the screen and in $logs/<name>.log; add a summary line with its
# wall time and the node's task counts from the play recap.
run_playbook() {
  local name=$1 what=$2 start recap
  shift 2
  start=$SECONDS
  ansible-playbook -i "$inventory" -e "demo_package_arch=$package_arch" "$@" | tee "$logs/$name.log"
  recap=$(grep -E "^$node +: ok=" "$logs/$name.log" | tail -n 1)
  last_changed=$(sed -E 's/.* changed=([0-9]+).*/\1/' <<<"$recap")
  summary+=("$(printf '%-34s %5d s   %s' "$what" "$((SECONDS - start))" \
    "$(sed -E 's/.* ok=([0-9]+) +changed=([0-9]+).* skipped=([0-9]+).*/\1 tasks ok, \2 changed, \3 skipped/' <<<"$recap")")")
}

start_all=$SECONDS
mkdir -p "$logs"
say "Starting the simulated node $node ($image, systemd as PID 1)"
podman rm --force --time 5 "$node" >/dev/null 2>&1 || true
podman run --detach --name "$node" --hostname "$node" --arch "$arch" --systemd=always "$image" >/dev/null
state=
for _ in $(seq 120); do
  state=$(podman exec "$node" systemctl is-system-running 2>/dev/null || true)
  case $state in running|degraded) break ;; esac
  sleep 1
done
case $state in
  running|degraded) ;;
  *) echo "demo: systemd in $node did not come up (state '$state'); see: podman logs $node" >&2; exit 1 ;;
esac
echo "node up: $(podman exec "$node" uname -m), $(podman exec "$node" sh -c '. /etc/os-release; echo "$PRETTY_NAME"')"
summary+=("$(printf '%-34s %5d s' "node started" "$((SECONDS - start_all))")")

say "Giving it simulated Ascend 910B NPUs and the Ascend packages in /root/ascend-packages"
echo "Ansible runs as: $mode. $note"
run_playbook node "simulated NPUs and packages" molecule/shared/node.yml

say "Running playbooks/site.yml: OS tuning, NPU driver + firmware, CANN, then the NPU health report"
run_playbook site-1 "site.yml, first run" playbooks/site.yml

say "Running playbooks/site.yml again on the converged node: nothing left to change"
run_playbook site-2 "site.yml, second run (idempotent)" playbooks/site.yml
second_changed=$last_changed

say "The node's NPUs as npu-smi shows them"
podman exec "$node" npu-smi info

printf '\n### Summary (%s, %s node)\n' "$mode" "$(podman exec "$node" uname -m)"
printf '%s\n' "${summary[@]}"
printf '%-34s %5d s\n' "total" "$((SECONDS - start_all))"
if [ "$second_changed" != 0 ]; then
  echo "demo: the second run of site.yml changed $second_changed tasks; it must change none (see $logs/site-2.log)" >&2
  exit 1
fi
cat <<MSG

The node keeps running so you can look around (logs of each run: .cache/demo/):
  podman exec -it $node bash              (try: npu-smi info -l, ascend-sim set chips.3.health=Alarm)
  ansible-playbook -i $inventory playbooks/site.yml     (needs ANSIBLE_COLLECTIONS_PATH=$repo/.cache)
Remove it with: make demo-clean
MSG
