#!/usr/bin/env bash
# The demo: build two simulated Ascend 910B nodes (containers with systemd as PID 1, the simulated NPUs and fake
# Ascend packages) - a Kunpeng stand-in (arm64 under qemu) and an x86_64 node - then run playbooks/site.yml against
# both with the demo inventory, twice: the second run must change nothing. site.yml ends with the vLLM service: on
# the arm64 node in container mode through the simulator's docker stand-in, on the x86_64 node a real vLLM (its CPU
# build) serving a tiny random-weight DeepSeek-V3, which answers the demo's last completion. At the end: each stage's wall
# time, and each site.yml run's task and changed counts.
#
# The x86_64 node gets the vLLM venv `make vllm-assets` built, mounted where the role keeps its venv (an overlay:
# what the role writes there stays in the node), so the role finds every pin installed and the demo does not spend two
# minutes of CPU installing 878 MB of wheels again; DEMO_INSTALL_VLLM=1 lets the role install it from the wheelhouse
# instead, as scenario vllm always does.
#
# Ansible runs under Mitogen (pinned in requirements.txt), as a user may enable it for a fleet: its strategy keeps
# one Python process on the node, where plain Ansible starts Python (under arm64 emulation, seconds) for every task.
# The Molecule scenario `site` proves the same settings, on arm64 under Mitogen and on x86_64 with plain Ansible.
#
# Usage: demo.sh            build the node and run the playbook (the node stays up to be explored)
#        demo.sh --clean    remove the node
# Environment: DEMO_MITOGEN=0 runs plain Ansible; DEMO_ARCH=amd64 makes the first node x86_64 too (to compare);
# DEMO_INSTALL_VLLM=1 installs vLLM from the wheelhouse on the x86_64 node; KAV_WHEELHOUSE, KAV_VLLM_VENV and
# KAV_TINY_MODEL (set by the Makefile) name the vLLM wheelhouse, the venv built from it and the tiny model.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
node=kunpeng-demo-node
serving_node=x86-serving-demo-node
inventory=inventories/demo/hosts.yml
arch=${DEMO_ARCH:-arm64}
logs=$repo/.cache/demo
export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-false} ANSIBLE_CALLBACK_RESULT_FORMAT=yaml
# Progress a person can follow: every task's name and result, without the hosts a task skipped.
export ANSIBLE_DISPLAY_SKIPPED_HOSTS=false
# Mitogen starts Python on the emulated node within ANSIBLE_TIMEOUT (Ansible's default: 10 s), which qemu can
# exceed on a busy machine.
export ANSIBLE_TIMEOUT=${ANSIBLE_TIMEOUT:-60}

case $arch in
  arm64) package_arch=aarch64 ;;
  amd64) package_arch=x86-64 ;;
  *) echo "demo: DEMO_ARCH must be arm64 or amd64, not '$arch'" >&2; exit 2 ;;
esac
image=localhost/debian-$arch-ci:bookworm

if [ "${1:-}" = --clean ]; then
  podman rm --force --time 5 "$node" "$serving_node" >/dev/null 2>&1 || true
  echo "removed $node and $serving_node"
  exit 0
fi

if [ "${DEMO_MITOGEN:-1}" != 0 ]; then
  # How a user enables Mitogen: its strategy plugins, found in the installed package.
  ANSIBLE_STRATEGY_PLUGINS=$(python -c 'import ansible_mitogen, os; print(os.path.join(os.path.dirname(ansible_mitogen.__file__), "plugins", "strategy"))')
  export ANSIBLE_STRATEGY_PLUGINS ANSIBLE_STRATEGY=mitogen_linear
  # Only the collections in .cache (this one, and ansible.posix that os_tuning uses, linked by make link): Mitogen
  # lists every installed collection for each module it runs, and the venv's ansible package has about a hundred.
  export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
  mode="Mitogen (mitogen_linear)"
  note="ansible-core warns at every run that strategy plugins outside ansible.builtin are deprecated: that is Mitogen's (docs/testing.md, \"Mitogen\")."
else
  mode="plain Ansible"
  note=
fi

stage=0
say() { stage=$((stage + 1)); printf '\n### [%d/6] %s\n' "$stage" "$*"; }
summary=()

# Run a playbook against the node, its output on the screen and in $logs/<name>.log; add a summary line with its
# wall time and the node's task counts from the play recap.
run_playbook() {
  local name=$1 what=$2 start recap
  shift 2
  start=$SECONDS
  local -a arch_override=()
  # The inventory names each node's package architecture; DEMO_ARCH=amd64 makes both nodes x86_64.
  [ "$arch" = arm64 ] || arch_override=(-e "demo_package_arch=$package_arch")
  ansible-playbook -i "$inventory" "${arch_override[@]}" "$@" | tee "$logs/$name.log"
  last_changed=0
  local host first=1
  for host in "$node" "$serving_node"; do
    recap=$(grep -E "^$host +: ok=" "$logs/$name.log" | tail -n 1)
    last_changed=$((last_changed + $(sed -E 's/.* changed=([0-9]+).*/\1/' <<<"$recap")))
    summary+=("$(printf '%-34s %5s   %-22s %s' "$([ $first = 1 ] && echo "$what")" \
      "$([ $first = 1 ] && echo "$((SECONDS - start)) s")" "$host" \
      "$(sed -E 's/.* ok=([0-9]+) +changed=([0-9]+).* skipped=([0-9]+).*/\1 tasks ok, \2 changed, \3 skipped/' <<<"$recap")")")
    first=0
  done
}

start_all=$SECONDS
mkdir -p "$logs"
for asset in "${KAV_WHEELHOUSE:-}" "${KAV_TINY_MODEL:-}" "${KAV_VLLM_VENV:-}"; do
  if [ -z "$asset" ] || [ ! -d "$asset" ]; then
    echo "demo: the vLLM wheelhouse, its venv or the tiny model is missing ('$asset'): run make vllm-assets (or make demo)" >&2
    exit 1
  fi
done
venv_volume=(--volume "$KAV_VLLM_VENV:/opt/vllm/venv:O")
[ "${DEMO_INSTALL_VLLM:-0}" = 1 ] && venv_volume=()
say "Starting the simulated nodes $node ($image) and $serving_node (x86_64), systemd as PID 1"
podman rm --force --time 5 "$node" "$serving_node" >/dev/null 2>&1 || true
podman run --detach --name "$node" --hostname "$node" --arch "$arch" --systemd=always "$image" >/dev/null
podman run --detach --name "$serving_node" --hostname "$serving_node" --arch amd64 --systemd=always --shm-size=1g \
  --volume "$KAV_WHEELHOUSE:/srv/wheelhouse:ro" --volume "$KAV_TINY_MODEL:/srv/models/tiny-deepseek-v3:ro" \
  "${venv_volume[@]}" localhost/debian-amd64-ci:bookworm >/dev/null
for host in "$node" "$serving_node"; do
  state=
  for _ in $(seq 120); do
    state=$(podman exec "$host" systemctl is-system-running 2>/dev/null || true)
    case $state in running|degraded) break ;; esac
    sleep 1
  done
  case $state in
    running|degraded) ;;
    *) echo "demo: systemd in $host did not come up (state '$state'); see: podman logs $host" >&2; exit 1 ;;
  esac
  echo "node up: $host, $(podman exec "$host" uname -m), $(podman exec "$host" sh -c '. /etc/os-release; echo "$PRETTY_NAME"')"
done
summary+=("$(printf '%-34s %5d s' "nodes started" "$((SECONDS - start_all))")")

say "Giving it simulated Ascend 910B NPUs and the Ascend packages in /root/ascend-packages"
echo "Ansible runs as: $mode. $note"
run_playbook node "simulated NPUs and packages" molecule/shared/node.yml

say "Running playbooks/site.yml: the fleet plan, OS tuning, NPU driver + firmware, host CANN where native mode needs it, the NPU health report, then the vLLM service"
run_playbook site-1 "site.yml, first run" playbooks/site.yml

say "Running playbooks/site.yml again on the converged node: nothing left to change"
run_playbook site-2 "site.yml, second run (idempotent)" playbooks/site.yml
second_changed=$last_changed

say "The node's NPUs as npu-smi shows them"
podman exec "$node" npu-smi info

say "A completion from the real vLLM on $serving_node, through its endpoint"
podman exec "$serving_node" python3 -c '
import json, urllib.request
request = urllib.request.Request("http://127.0.0.1:8000/v1/completions", headers={"Content-Type": "application/json"},
    data=json.dumps({"model": "tiny-deepseek-v3", "prompt": "The NPU", "max_tokens": 16, "temperature": 0}).encode())
answer = json.load(urllib.request.urlopen(request, timeout=60))
print("endpoint http://127.0.0.1:8000/v1 (inside %s) answered: %r (%d tokens)"
      % ("'"$serving_node"'", answer["choices"][0]["text"], answer["usage"]["completion_tokens"]))'
# What makes it DeepSeek's path and not a dense model's: the attention and MoE backends vLLM chose, from its log.
echo "vLLM's backends for it: $(podman exec "$serving_node" journalctl --unit=vllm.service --no-pager --output=cat |
  grep -oE 'Using [^.]*(MLA|MoE)[^.]*' | sort -u | paste -sd ';' -)"
echo "call it yourself: podman exec $serving_node curl -s http://127.0.0.1:8000/v1/completions -H 'Content-Type: application/json' \\"
echo "  -d '{\"model\": \"tiny-deepseek-v3\", \"prompt\": \"Hello\", \"max_tokens\": 16}'   (curl: apt-get install curl in the node)"

printf '\n### Summary (%s; %s and x86_64 nodes)\n' "$mode" "$(podman exec "$node" uname -m)"
printf '%s\n' "${summary[@]}"
printf '%-34s %5d s\n' "total" "$((SECONDS - start_all))"
if [ "$second_changed" != 0 ]; then
  echo "demo: the second run of site.yml changed $second_changed tasks; it must change none (see $logs/site-2.log)" >&2
  exit 1
fi
cat <<MSG

The nodes keep running so you can look around (logs of each run: .cache/demo/):
  podman exec -it $node bash              (try: npu-smi info -l, ascend-sim set chips.3.health=Alarm)
  podman exec -it $serving_node bash   (try: systemctl status vllm, journalctl -u vllm)
  ansible-playbook -i $inventory playbooks/site.yml     (needs ANSIBLE_COLLECTIONS_PATH=$repo/.cache)
Remove it with: make demo-clean
MSG
