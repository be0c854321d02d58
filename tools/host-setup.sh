#!/usr/bin/env bash
# Prepare a Debian 12 machine (root) to run this collection's tests and demo: system packages, qemu-user
# binfmt registration for arm64 containers, and a podman configuration that works without systemd as PID 1.
# Idempotent: a second run changes nothing.
# Usage: host-setup.sh              everything (packages, binfmt, podman configuration, then --verify)
#        host-setup.sh --packages   only the Debian packages
#        host-setup.sh --verify     prove that every external command the tooling calls is there and runs
# `make test` runs --packages then --verify in the clean amd64 image (tools/check-host-setup.sh), so a
# command that this machine has only from earlier work fails there.
set -euo pipefail

# Every external command that the Makefile, .ci/run, tools/ and tests/simulator/ call beyond a minimal
# Debian: the package that provides it, and a command that proves it runs. --no-install-recommends is used, so a
# recommended package that a tool needs (mmdebstrap needs arch-test for a foreign architecture) is listed here.
tool_table='
qemu-user-static  qemu-aarch64-static --version
mmdebstrap        mmdebstrap --version
arch-test         arch-test arm64
podman            podman --version
runc              runc --version
netavark          /usr/lib/podman/netavark --version
aardvark-dns      /usr/lib/podman/aardvark-dns --version
iptables          iptables --version
python3-venv      python3 -c "import ensurepip, venv"
makeself          makeself --version
dpkg-dev          dpkg-architecture --version
git               git --version
rsync             rsync --version
make              make --version
shellcheck        shellcheck --version
chromium          chromium --headless --no-sandbox --disable-gpu --dump-dom "data:text/html,<p>headless-ok</p>" 2>&1 | grep -F headless-ok
'

log() { printf '[host-setup] %s\n' "$*"; }

packages() {
  local missing=() pkg probe
  while read -r pkg probe; do
    [ -n "$pkg" ] || continue
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done <<<"$tool_table"
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

verify() {
  local pkg probe failed=0 out
  while read -r pkg probe; do
    [ -n "$pkg" ] || continue
    if out=$(bash -c "$probe" 2>&1); then
      log "ok: ${probe%% *} ($pkg): $(head -n1 <<<"$out")"
    else
      log "FAILED: '$probe' (package $pkg): $(head -n3 <<<"$out")"
      failed=1
    fi
  done <<<"$tool_table"
  [ "$failed" = 0 ] || { echo "host-setup: a tool the tests need is missing or broken (above)" >&2; exit 1; }
}

binfmt() {
  # Without systemd as PID 1 nothing registers qemu with binfmt_misc. The F flag in Debian's entry makes the
  # interpreter usable inside containers.
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    log "registering qemu-aarch64 with binfmt_misc"
    grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf | grep . > /proc/sys/fs/binfmt_misc/register
  fi
}

podman_config() {
  # crun cannot set RLIMIT_NPROC or use hybrid cgroups on such machines; runc with cgroupfs works.
  local conf=/etc/containers/containers.conf
  local marker="# managed by kunpeng_ascend.vllm tools/host-setup.sh"
  if [ -e "$conf" ] && ! head -n1 "$conf" | grep -qF "$marker"; then
    log "keeping the existing $conf (not written by this script); podman needs runtime runc and cgroupfs here"
    return
  fi
  local desired="$marker
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
}

if [ "$(id -u)" -ne 0 ]; then
  echo "host-setup: run as root (it installs packages and registers binfmt handlers)" >&2
  exit 1
fi

case ${1:-all} in
  --packages) packages ;;
  --verify) verify ;;
  all)
    packages
    binfmt
    podman_config
    verify
    log "ready: $(podman --version), qemu-aarch64 $(head -n1 /proc/sys/fs/binfmt_misc/qemu-aarch64)"
    ;;
  *) echo "host-setup: unknown argument '$1' (use --packages, --verify or nothing)" >&2; exit 2 ;;
esac
