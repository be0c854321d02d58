#!/usr/bin/env bash
# The tools' venv (requirements.txt), kept in the asset cache, one per requirements.txt and Python, so that a clean
# clone links to it instead of installing every pin again (about a minute); the checkout's venv path is the link.
# A venv is not relocatable, so it is built where it stays, and marked complete last: an interrupted build is
# built again. Usage: make-venv.sh VENV_LINK PYTHON CACHE_DIR
set -euo pipefail
link=$1 python=$2 cache=$3
repo=$(cd "$(dirname "$0")/.." && pwd)
key=$({ cat "$repo/requirements.txt"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
target=$cache/venvs/$key
mkdir -p "$cache/venvs"
# One build at a time: two checkouts may set up at once.
exec 9> "$cache/venvs/.lock"
flock 9
if [ ! -e "$target/.complete" ]; then
  rm -rf "$target"
  start=$SECONDS
  "$python" -m venv "$target"
  "$target/bin/pip" install --quiet --disable-pip-version-check -r "$repo/requirements.txt"
  touch "$target/.complete"
  echo "[venv] $target built in $((SECONDS - start)) s"
fi
# A venv directory of an older checkout (not a link) is replaced.
if [ "$(readlink "$link" 2>/dev/null)" != "$target" ]; then
  rm -rf "$link"
  ln -s "$target" "$link"
  echo "[venv] $link -> $target"
fi
