#!/usr/bin/env bash
# The demo: build a simulated Kunpeng + Ascend 910B node (an arm64 container under qemu, systemd as PID 1, with
# the simulated NPUs and fake Ascend packages), then run playbooks/site.yml against it with the demo inventory,
# twice: the second run changes nothing.
# Usage: demo.sh            build the node and run the playbook (the node stays up to be explored)
#        demo.sh --clean    remove the node
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
node=kunpeng-demo-node
image=localhost/debian-arm64-ci:bookworm
inventory=inventories/demo/hosts.yml
export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-false} ANSIBLE_CALLBACK_RESULT_FORMAT=yaml

say() { printf '\n### %s\n' "$*"; }

if [ "${1:-}" = --clean ]; then
  podman rm --force --time 5 "$node" >/dev/null 2>&1 || true
  echo "removed $node"
  exit 0
fi

start=$SECONDS
say "Starting the simulated node $node ($image, systemd as PID 1)"
podman rm --force --time 5 "$node" >/dev/null 2>&1 || true
podman run --detach --name "$node" --hostname "$node" --arch arm64 --systemd=always "$image" >/dev/null
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

say "Giving it simulated Ascend 910B NPUs and the Ascend packages in /root/ascend-packages"
ansible-playbook -i "$inventory" tests/simulator/node.yml

say "Running playbooks/site.yml against the demo inventory: OS tuning, NPU driver + firmware, CANN"
ansible-playbook -i "$inventory" playbooks/site.yml

say "Running it again: nothing left to change"
ansible-playbook -i "$inventory" playbooks/site.yml | tee "$repo/.cache/demo-second-run.log" | tail -n 3

say "The node's NPUs as npu-smi shows them"
podman exec "$node" npu-smi info

say "Done in $((SECONDS - start)) s"
cat <<MSG
The node keeps running so you can look around:
  podman exec -it $node bash              (try: npu-smi info -l, ascend-sim set chips.3.health=Alarm)
  ansible-playbook -i $inventory playbooks/site.yml     (needs ANSIBLE_COLLECTIONS_PATH=$repo/.cache)
Remove it with: make demo-clean
MSG
