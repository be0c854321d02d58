#!/usr/bin/env bash
# Build the execution environment (execution-environment.yml) with ansible-builder and podman, without a registry,
# then prove it: the collection's health playbook runs from inside the image against a simulated Ascend node and
# must report 8 NPUs. docs/execution-environment.md explains the image. Usage: build-ee.sh [--no-test | --test-only]
#   1. the base image localhost/kunpeng-ascend-vllm-ee-base:bookworm, from the test image that
#      tools/build-images.sh amd64 imports (python3, pip, venv and an apt-get wrapper for bindep added);
#   2. a wheelhouse of every Python package the build installs, downloaded once by the host's pip (the build
#      itself reaches no index: pip in the build reads a pip.conf mounted for the build only);
#   3. the collection tarball of this checkout;
#   4. ansible-builder build, tagged localhost/kunpeng-ascend-vllm-ee:<collection version>;
#   5. the test (--test-only: this step alone, on the image built before).
# Every step is cached: the base image by the hash of its recipe, the wheelhouse by the hash of what it holds,
# podman's layers by their inputs (an unchanged collection keeps its tarball, so a re-run builds nothing).
# Environment: PYTHON (default: the python3 on PATH) must be CPython 3.11 on x86_64, the image's Python, so that
#   its pip downloads the wheels the image installs; KAV_CACHE is where the wheelhouse is kept; EE_SIM_PROFILE
#   (default 910b-8) is the simulated node the test reads (any other profile makes the test fail: a self-check);
#   EE_NO_CACHE=1 rebuilds the base image, the wheelhouse and every layer (a cold build).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

from=localhost/debian-amd64-ci:bookworm
base=localhost/kunpeng-ascend-vllm-ee-base:bookworm
work=$repo/.cache/ee
tarball=$work/kunpeng_ascend-vllm.tar.gz
python=${PYTHON:-python3}
cache=${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}
log() { printf '[ee] %s\n' "$*"; }
die() { printf '[ee] ERROR: %s\n' "$*" >&2; exit 1; }

test_image=1 build_image=1
case ${1:-} in
  --no-test) test_image=0 ;;
  --test-only) build_image=0 ;;
  '') ;;
  *) die "unknown argument '$1' (use --no-test, --test-only or nothing)" ;;
esac

for tool in podman ansible-builder ansible-galaxy "$python"; do
  command -v "$tool" >/dev/null || die "$tool not found: run 'make venv' (ansible-builder is in requirements.txt) or tools/host-setup.sh"
done
version=$(sed -n 's/^version: *//p' galaxy.yml)
[ -n "$version" ] || die "galaxy.yml has no version: line"
image=localhost/kunpeng-ascend-vllm-ee:$version

# The image runs the versions the tests run: execution-environment.yml must pin what requirements.txt pins.
pin() { sed -n "s/^\\( *package_pip: *\\)\\{0,1\\}$1==\\([^ #]*\\).*/\\2/p" "$2" | head -n1; }
core=$(pin ansible-core requirements.txt)
ee_core=$(pin ansible-core execution-environment.yml)
if [ -z "$core" ] || [ "$core" != "$ee_core" ]; then
  die "execution-environment.yml pins ansible-core==${ee_core:-nothing}, requirements.txt ansible-core==${core:-nothing}: make them equal"
fi
runner=$(pin ansible-runner execution-environment.yml)
[ -n "$runner" ] || die "execution-environment.yml does not pin ansible-runner (dependencies.ansible_runner.package_pip)"
# What ansible-builder itself installs in the image: the container init and, in its builder stage, bindep.
builder_pkgs=(dumb-init==1.2.5 bindep pyyaml packaging)

mkdir -p "$work"
total_start=$SECONDS
no_cache=()
[ "${EE_NO_CACHE:-0}" != 1 ] || no_cache=(--no-cache)

build() {
  podman image exists "$from" || die "$from is missing: run 'tools/build-images.sh amd64' (make images)"

  # 1. The base image. ee-apt is the package manager ansible-builder calls (options.package_manager_path): it
  # installs bindep's list with apt-get and leaves no package lists behind.
  # The image carries the hash of its recipe (these two files and the image it starts from) as a label.
  local ctx recipe
  ctx=$work/base-context
  rm -rf "$ctx"
  mkdir -p "$ctx"
  cat > "$ctx/ee-apt" <<'EOF'
#!/bin/sh
# The package manager of ansible-builder's scripts on Debian: "install -y [opts] PKG..." and "clean all".
set -e
case "$1" in
  install)
    shift
    missing=
    for arg in "$@"; do
      case "$arg" in -*) ;; *) dpkg-query -W -f='${Status}' "$arg" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $arg" ;; esac
    done
    [ -z "$missing" ] && exit 0
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
    apt-get clean
    rm -rf /var/lib/apt/lists/*
    ;;
  clean) apt-get clean; rm -rf /var/lib/apt/lists/* ;;
  *) echo "ee-apt: unsupported command '$1' (install, clean)" >&2; exit 2 ;;
esac
EOF
  cat > "$ctx/Containerfile" <<EOF
FROM $from
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      python3-pip python3-venv && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY ee-apt /usr/local/sbin/ee-apt
RUN chmod 0755 /usr/local/sbin/ee-apt
CMD ["bash"]
EOF
  recipe=$( { cat "$ctx/ee-apt" "$ctx/Containerfile"; podman image inspect --format '{{.Id}}' "$from"; } | sha256sum | cut -c1-16)
  if [ "${EE_NO_CACHE:-0}" != 1 ] && podman image exists "$base" &&
     [ "$(podman image inspect --format '{{ index .Labels "ee.recipe" }}' "$base")" = "$recipe" ]; then
    log "$base cached (recipe $recipe)"
  else
    start=$SECONDS
    log "building $base from $from"
    podman build --pull=never "${no_cache[@]}" --label "ee.recipe=$recipe" -t "$base" "$ctx" > "$work/base.log" 2>&1 ||
      { tail -n 30 "$work/base.log"; die "building $base failed (log: $work/base.log)"; }
    log "built $base in $((SECONDS - start)) s"
  fi

  # 2. The wheelhouse, named by what it holds: the pinned builder packages, the collection's own requirements
  # (meta/ee-requirements.txt) and the versions requirements.txt pins for them (constraints, without extras).
  "$python" -c 'import sys, platform; sys.exit(0 if sys.version_info[:2] == (3, 11) and platform.machine() == "x86_64" else 1)' ||
    die "PYTHON=$python is not CPython 3.11 on x86_64 (the image's Python): set PYTHON"
  reqs=$work/wheel-requirements.txt constraints=$work/wheel-constraints.txt
  printf '%s\n' "ansible-core==$core" "ansible-runner==$runner" "${builder_pkgs[@]}" > "$reqs"
  grep -v '^ *#' meta/ee-requirements.txt | grep . >> "$reqs"
  grep -E '^[A-Za-z0-9_.-]+==' requirements.txt > "$constraints"
  wheels=$cache/ee-wheels/$(cat "$reqs" "$constraints" | sha256sum | cut -c1-16)
  if [ "${EE_NO_CACHE:-0}" != 1 ] && [ -f "$wheels/.complete" ]; then
    log "wheelhouse $wheels cached ($(find "$wheels" -name '*.whl' | wc -l) wheels)"
  else
    start=$SECONDS
    rm -rf "$wheels.tmp"
    "$python" -m pip --disable-pip-version-check download --progress-bar off --only-binary=:all: \
      --dest "$wheels.tmp" -r "$reqs" -c "$constraints" > "$work/pip-download.log" 2>&1 || {
        tail -n 30 "$work/pip-download.log"
        die "pip download of $reqs failed (above; log: $work/pip-download.log): check the index pip is configured with"; }
    rm -rf "$wheels"
    mv "$wheels.tmp" "$wheels"
    touch "$wheels/.complete"
    log "wheelhouse $wheels: $(find "$wheels" -name '*.whl' | wc -l) wheels, $(du -sh "$wheels" | cut -f1), $((SECONDS - start)) s"
  fi
  printf '[global]\nno-index = true\nfind-links = /ee-wheels\n' > "$work/pip.conf"

  # 3. The collection. A rebuilt tarball differs in its timestamps only; the one in place is kept while its
  # MANIFEST.json (which holds the checksum of every file) is the same, so that podman's layer cache holds.
  rm -rf "$work/dist"
  ansible-galaxy collection build --force --output-path "$work/dist" . >/dev/null
  built=$work/dist/kunpeng_ascend-vllm-$version.tar.gz
  [ -f "$built" ] || die "ansible-galaxy did not build $built (galaxy.yml namespace, name and version)"
  manifest() { tar -xzOf "$1" MANIFEST.json | sha256sum; }
  if [ -f "$tarball" ] && [ "$(manifest "$tarball")" = "$(manifest "$built")" ]; then
    log "collection $version unchanged: keeping $tarball"
  else
    mv "$built" "$tarball"
    log "collection $version built: $tarball ($(du -k "$tarball" | cut -f1) KiB)"
  fi

  # 4. The execution environment. --pull=never: every image comes from this machine. The wheelhouse and pip.conf
  # are mounted for the build's RUN steps only: the image keeps nothing of them but their empty mount points.
  start=$SECONDS
  log "ansible-builder build -> $image"
  ansible-builder build --file execution-environment.yml --context "$work/context" --tag "$image" \
    --container-runtime podman --verbosity 3 "${no_cache[@]}" \
    --extra-build-cli-args "--pull=never --volume $wheels:/ee-wheels:ro --volume $work/pip.conf:/etc/pip.conf:ro" \
    > "$work/build.log" 2>&1 || { tail -n 60 "$work/build.log"; die "ansible-builder build failed (full log: $work/build.log)"; }
  log "built $image in $((SECONDS - start)) s ($(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%d MB", $1 / 1e6}'))"
}

test_ee() {
  # 5. The proof, from inside the image as AWX runs it (its own user, no privileges): what it holds, then the
  # health playbook of the installed collection against a simulated 8-NPU node, the simulator's npu-smi on PATH
  # (as the build stage of tools/run-tests.sh does on the host).
  start=$SECONDS
  name=e-ee-test-$$
  out=$work/test.log
  podman run --rm --pull=never --name "$name" --network none --volume "$repo/tests/simulator:/sim:ro" \
    --env EE_SIM_PROFILE="${EE_SIM_PROFILE:-910b-8}" "$image" bash -ec '
      tmp=$(mktemp -d)
      ansible-galaxy collection list kunpeng_ascend.vllm | grep -E "^kunpeng_ascend\.vllm +[0-9]"
      ansible-runner --version
      python3 -c "import netaddr, matplotlib; print(\"netaddr\", netaddr.__version__, \"matplotlib\", matplotlib.__version__)"
      ssh -V 2>&1
      if command -v npu-smi; then echo "npu-smi must not be in the image" >&2; exit 1; fi
      mkdir -p "$tmp/root/usr/local/Ascend/driver" "$tmp/bin"
      printf "Version=24.1.rc1\n" > "$tmp/root/usr/local/Ascend/driver/version.info"
      ln -s /sim/ascend-sim "$tmp/bin/npu-smi"
      printf "ascend_nodes:\n  hosts:\n    localhost:\n      ansible_connection: local\n" > "$tmp/hosts.yml"
      export ASCEND_SIM_ROOT=$tmp/root ASCEND_SIM_STATE=$tmp/state.json ASCEND_SIM_LOG=$tmp/calls.log
      /sim/ascend-sim init --profile "$EE_SIM_PROFILE" >/dev/null
      PATH=$tmp/bin:$PATH ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 \
        ansible-playbook -i "$tmp/hosts.yml" kunpeng_ascend.vllm.health
    ' > "$out" 2>&1 || { cat "$out"; die "the health playbook failed inside $image (log: $out)"; }
  grep -q '8 NPUs, 8 chips' "$out" || { cat "$out"; die "the health playbook inside $image did not report 8 NPUs, 8 chips (log: $out)"; }
  log "inside: $(grep -E '^kunpeng_ascend\.vllm ' "$out" | tr -s ' ' | sed 's/ *$//'), ansible-runner $(sed -n 2p "$out"), $(grep -E '^netaddr ' "$out")"
  log "inside $image: kunpeng_ascend.vllm.health reported 8 NPUs, 8 chips ($((SECONDS - start)) s)"
}

[ "$build_image" = 0 ] || build
podman image exists "$image" || die "$image is missing: run tools/build-ee.sh without --test-only"
[ "$test_image" = 0 ] || test_ee
log "done in $((SECONDS - total_start)) s$([ "$test_image" = 1 ] || echo ' (not tested: --no-test)')"
