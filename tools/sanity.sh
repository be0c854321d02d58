#!/usr/bin/env bash
# Run `ansible-test sanity` on a copy of the working tree laid out as ansible_collections/kunpeng_ascend/vllm
# (ansible-test insists on that path and on a git checkout). Usage: sanity.sh [extra ansible-test args]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$repo/.venv}
work=$repo/.cache/sanity/ansible_collections/kunpeng_ascend/vllm

# ansible-test bootstraps pip in its venvs with a script it downloads from a host that may be unreachable; a
# stand-in that runs pip from the official pip wheel (from PyPI) does the same job.
pip_version=$("$venv/bin/python" -c 'from ansible_test._internal.python_requirements import get_venv_packages as g; print(g(type("P", (), {"version": ""})())["pip"])')
cache=$HOME/.ansible/test/cache
get_pip=$cache/get_pip_${pip_version//./_}.py
mkdir -p "$cache"
[ -s "$cache/pip-$pip_version-py3-none-any.whl" ] ||
  "$venv/bin/pip" download --quiet --no-deps --only-binary=:all: -d "$cache" "pip==$pip_version"
cat > "$get_pip" <<PY
# Stand-in for get-pip.py: install the requested packages with pip run from its own wheel. Like get-pip.py it
# takes --no-setuptools / --no-wheel as "do not add them", which pip itself does not know.
import sys
sys.path.insert(0, "$cache/pip-$pip_version-py3-none-any.whl")
from pip._internal.cli.main import main
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--upgrade", "--force-reinstall"] + args))
PY

# A fresh copy of what git would commit (tracked, and untracked but not ignored), in its own git checkout.
rm -rf "$work"
mkdir -p "$work"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard) |
  rsync -a --ignore-missing-args --from0 --files-from=- "$repo/" "$work/"
cd "$work"
git init -q
git add -A .
exec "$venv/bin/ansible-test" sanity --venv --python 3.11 --color no "$@"
