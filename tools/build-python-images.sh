#!/usr/bin/env bash
# The customize hooks below run inside mmdebstrap, which passes the root as $1: single quotes on purpose.
# shellcheck disable=SC2016
# Build the images of the managed hosts' other Pythons, for the unit tests of what runs on the hosts (stage
# `targets` of tools/run-tests.sh): Debian 11's python3 is 3.9, the Python of openEuler 22.03 and Kylin V10, the
# oldest the modules support; Debian 13's is 3.13, newer than any target (3.12 is the newest), so what it still
# runs no target release removed. Each image holds pytest (the pin of requirements.txt) in /opt/pytest and an empty
# package `ansible` in /opt/ansible-target, under which the tests mount ansible-core's module_utils, as Ansible
# ships them to a host. Images are cached like the other test images (FORCE=1 rebuilds).
# Usage: build-python-images.sh [py39] [py313]   (default: both)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
pip=${PIP:-$repo/.venv/bin/pip}
log() { printf '[images] %s\n' "$*"; }

pytest_pin=$(grep -E '^pytest==' "$repo/requirements.txt")
# The recipe: this script and the pytest pin; a change of either rebuilds.
recipe=$( (cat "$0"; echo "$pytest_pin") | sha256sum | cut -c1-16)

build() {
  local name=$1 suite=$2 version=$3 image="localhost/$1-ci:$2"
  if [ "${FORCE:-0}" != 1 ] && podman image exists "$image" &&
     [ "$(podman image inspect --format '{{ index .Labels "ci.recipe" }}' "$image")" = "$recipe" ]; then
    log "$image cached (recipe $recipe)"
    return
  fi
  local tmp start=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  log "building $image"
  # pytest and what it needs on that Python, downloaded here (the host's pip reaches PyPI) and installed offline.
  # pip download evaluates dependency markers for its own Python, so the backports pytest needs below 3.11 are
  # named too; the offline install takes only what that Python needs.
  "$pip" download --quiet --disable-pip-version-check --only-binary=:all: --python-version "$version" \
    --dest "$tmp/wheels" "$pytest_pin" tomli exceptiongroup typing-extensions
  mmdebstrap --quiet --arch=amd64 --variant=minbase --include=python3,python3-venv,python-is-python3 \
    --customize-hook='chroot "$1" python3 -m venv /opt/pytest' \
    --customize-hook="mkdir \"\$1/tmp/wheels\" && cp '$tmp'/wheels/*.whl \"\$1/tmp/wheels/\"" \
    --customize-hook="chroot \"\$1\" env -u PIP_FIND_LINKS /opt/pytest/bin/pip install --quiet --disable-pip-version-check --no-index --find-links /tmp/wheels '$pytest_pin'" \
    --customize-hook='rm -rf "$1/tmp/wheels"' \
    --customize-hook='mkdir -p "$1/opt/ansible-target/ansible/module_utils" && : > "$1/opt/ansible-target/ansible/__init__.py"' \
    "$suite" "$tmp/rootfs.tar" "$mirror"
  podman import --quiet --arch amd64 --change 'CMD ["/bin/bash"]' --change "LABEL ci.recipe=$recipe" \
    "$tmp/rootfs.tar" "$image" >/dev/null
  log "built $image ($(podman run --rm "$image" python3 --version)) in $((SECONDS - start)) s"
}

names=("$@")
[ "${#names[@]}" -gt 0 ] || names=(py39 py313)
for name in "${names[@]}"; do
  case $name in
    py39) build python39 bullseye 3.9 ;;
    py313) build python313 trixie 3.13 ;;
    *) echo "build-python-images: unknown image '$name' (use py39 or py313)" >&2; exit 2 ;;
  esac
done
