#!/usr/bin/env bash
# Prepare a Debian 12 machine (root) to run this collection's tests and demo: system packages, qemu-user
# binfmt registration for arm64 containers, and a podman configuration that works without systemd as PID 1.
# Idempotent: a second run changes nothing.
set -euo pipefail

packages=(qemu-user-static mmdebstrap podman runc netavark aardvark-dns iptables python3-venv
          makeself dpkg-dev git rsync make)

log() { printf '[host-setup] %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "host-setup: run as root (it installs packages and registers binfmt handlers)" >&2
  exit 1
fi

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Without systemd as PID 1 nothing registers qemu with binfmt_misc. The F flag in Debian's entry makes the
# interpreter usable inside containers.
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  log "registering qemu-aarch64 with binfmt_misc"
  grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf | grep . > /proc/sys/fs/binfmt_misc/register
fi

# crun cannot set RLIMIT_NPROC or use hybrid cgroups on such machines; runc with cgroupfs works.
conf=/etc/containers/containers.conf
marker="# managed by kunpeng_ascend.vllm tests/tooling/host-setup.sh"
if [ ! -e "$conf" ] || head -n1 "$conf" | grep -qF "$marker"; then
  desired="$marker
[containers]
default_ulimits = [\"nofile=16384:16384\", \"nproc=16384:16384\"]

[engine]
runtime = \"runc\"
cgroup_manager = \"cgroupfs\"
events_logger = \"file\"

[network]
network_backend = \"netavark\"
"
  if [ "$(cat "$conf" 2>/dev/null)" != "$(printf '%s' "$desired")" ]; then
    log "writing $conf"
    mkdir -p "$(dirname "$conf")"
    printf '%s' "$desired" > "$conf"
  fi
else
  log "keeping the existing $conf (not written by this script); podman needs runtime runc and cgroupfs here"
fi
log "ready: $(podman --version), qemu-aarch64 $(cat /proc/sys/fs/binfmt_misc/qemu-aarch64 | head -n1)"
