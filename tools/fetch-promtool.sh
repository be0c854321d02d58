#!/usr/bin/env bash
# promtool for the tests (`promtool test rules`, `check rules`, `check config`, `check metrics`), taken from the
# same Debian 12 package the monitoring role installs on the nodes (prometheus 2.42), without installing anything
# on this machine: apt-get downloads the .deb with private lists and cache under the asset cache (the machine's own
# sources and keys, so the archive's signature is checked as for any install), and usr/bin/promtool is extracted.
# Usage: fetch-promtool.sh     Prints KAV_PROMTOOL=<path> at the end. Idempotent: a promtool that runs is kept.
#   KAV_CACHE  the cache folder (default $HOME/.cache/kunpeng-ascend-vllm)
#   FORCE=1    download again (a newer Debian 12 point release)
set -euo pipefail
cache=${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}
dest=$cache/promtool
promtool=$dest/promtool
log() { printf '[promtool] %s\n' "$*"; }
die() { printf '[promtool] ERROR: %s\n' "$*" >&2; exit 1; }

if [ "${FORCE:-0}" != 1 ] && [ -x "$promtool" ] && "$promtool" --version >/dev/null 2>&1; then
  log "$promtool is there ($(cat "$dest/VERSION" 2>/dev/null || echo 'version unknown')); FORCE=1 fetches it again"
  printf 'KAV_PROMTOOL=%s\n' "$promtool"
  exit 0
fi

{ command -v apt-get && command -v dpkg-deb; } >/dev/null || die "needs apt-get and dpkg-deb (a Debian machine)"
[ "$(dpkg --print-architecture)" = amd64 ] || log "this machine is $(dpkg --print-architecture): fetching that architecture's package"
start=$SECONDS
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$dest"
# Private state and cache: this machine's package lists and archives stay as they are. The sandbox user is root, as
# apt's _apt user cannot write into a root-owned cache folder.
apt=(apt-get -q -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o "Dir::Cache::archives=$apt_dir/archives"
  -o APT::Sandbox::User=root)
log "refreshing the private package lists in $apt_dir"
"${apt[@]}" update >/dev/null || die "apt-get update failed (network, or the sources of this machine)"
version=$(apt-cache -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" policy prometheus |
  awk '/Candidate:/ {print $2}')
case $version in
  2.42.*) ;;
  '' | '(none)') die "no prometheus package in this machine's apt sources (Debian 12 has prometheus 2.42)" ;;
  *) die "the apt sources offer prometheus $version; the role installs Debian 12's 2.42: use a Debian 12 machine" ;;
esac
work=$(mktemp -d "$dest/.partial.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "downloading prometheus $version"
(cd "$work" && "${apt[@]}" download "prometheus=$version" >/dev/null) || die "apt-get download prometheus=$version failed"
deb=$(ls "$work"/prometheus_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" ./usr/bin/promtool
chmod 0755 "$work/usr/bin/promtool"
"$work/usr/bin/promtool" --version >/dev/null || die "the extracted promtool does not run"
mv -f "$work/usr/bin/promtool" "$promtool"
echo "$version" > "$dest/VERSION"
log "promtool $version in $promtool ($((SECONDS - start)) s)"
printf 'KAV_PROMTOOL=%s\n' "$promtool"
