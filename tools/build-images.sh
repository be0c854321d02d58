#!/usr/bin/env bash
# The customize hooks below run inside mmdebstrap, which passes the root as $1: single quotes on purpose.
# shellcheck disable=SC2016
# Build the Debian 12 test images (arm64 stands in for Kunpeng servers, amd64 for fast scenarios) with
# mmdebstrap and import them into podman. No registry is needed. Images are cached: an existing image is kept
# unless FORCE=1. Usage: build-images.sh [arm64] [amd64]   (default: both)
set -euo pipefail

suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# python-is-python3: the simulator's fake npu-smi runs through `#!/usr/bin/env python`. pciutils and net-tools:
# what a server's base install has and the NPU driver installer calls (lspci, ifconfig); the demo and scenarios
# skip package installs, which take minutes under emulation.
includes=python3,python-is-python3,python3-apt,systemd,systemd-sysv,dbus,iproute2,iputils-ping,procps,sudo,ca-certificates,gzip,tar,kmod,pciutils,net-tools
log() { printf '[images] %s\n' "$*"; }
# dpkg without fsync and without docs, manuals and translations: under arm64 emulation every file written costs
# time, and a test node needs none of them. Permanent in the images (dpkg.cfg.d), so the scenarios' own package
# installs are faster too; a test image is thrown away after each scenario, so unsafe I/O risks nothing.
dpkgopts=(--dpkgopt=force-unsafe-io
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias'
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright')

# Units that only fail or waste time in a container; binfmt ones must never touch the host's registrations.
customize_common='for u in systemd-binfmt.service proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount getty.target e2scrub_reap.service apt-daily.timer apt-daily-upgrade.timer; do ln -sf /dev/null "$1/etc/systemd/system/$u"; done'
# Under qemu-user these units fail with 243/CREDENTIALS; an empty LoadCredential= lets them start.
customize_arm64='for u in systemd-sysusers systemd-tmpfiles-setup systemd-tmpfiles-setup-dev; do mkdir -p "$1/etc/systemd/system/$u.service.d"; printf "[Service]\nLoadCredential=\n" > "$1/etc/systemd/system/$u.service.d/qemu-user.conf"; done'

# An image carries the hash of this script as a label: a changed recipe rebuilds it, an unchanged one is reused.
recipe=$(sha256sum "$0" | cut -c1-16)

build() {
  local arch=$1 image="localhost/debian-$1-ci:$suite" stopsignal
  if [ "${FORCE:-0}" != 1 ] && podman image exists "$image" &&
     [ "$(podman image inspect --format '{{ index .Labels "ci.recipe" }}' "$image")" = "$recipe" ]; then
    log "$image cached (recipe $recipe)"
    return
  fi
  # qemu-user shifts real-time signals by two: SIGRTMIN+5 from the host reaches an emulated systemd as
  # SIGRTMIN+3 (halt). Native amd64 keeps systemd's own SIGRTMIN+3.
  case $arch in
    arm64) stopsignal='SIGRTMIN+5' ;;
    *) stopsignal='SIGRTMIN+3' ;;
  esac
  local hooks=(--customize-hook="$customize_common")
  [ "$arch" = arm64 ] && hooks+=(--customize-hook="$customize_arm64")
  local tmp start=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  log "building $image"
  mmdebstrap --quiet --arch="$arch" --variant=minbase --include="$includes" "${dpkgopts[@]}" "${hooks[@]}" \
    "$suite" "$tmp/rootfs.tar" "$mirror"
  podman import --quiet --arch "$arch" --change 'CMD ["/lib/systemd/systemd"]' --change "STOPSIGNAL $stopsignal" \
    --change 'ENV container=podman' --change "LABEL ci.recipe=$recipe" "$tmp/rootfs.tar" "$image" >/dev/null
  log "built $image in $((SECONDS - start)) s"
}

arches=("$@")
[ "${#arches[@]}" -gt 0 ] || arches=(arm64 amd64)
for arch in "${arches[@]}"; do
  case $arch in
    arm64|amd64) ;;
    *) echo "build-images: unknown architecture '$arch' (use arm64 or amd64)" >&2; exit 2 ;;
  esac
done
# Side by side: the arm64 build is qemu's CPU, the amd64 one mostly download and disk.
pids=()
for arch in "${arches[@]}"; do
  build "$arch" &
  pids+=("$!")
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
[ "$failed" = 0 ] || { echo "build-images: a build failed (above)" >&2; exit 1; }
