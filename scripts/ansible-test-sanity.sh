#!/usr/bin/env bash
# Run `ansible-test sanity` on the collection, with the ansible-test of one ansible-core line.
#
#   scripts/ansible-test-sanity.sh            # the ansible-test on PATH (.venv: the pinned 2.19)
#   scripts/ansible-test-sanity.sh .venv-2.21 # that venv's ansible-core and Python (make venv-2.21)
#
# The sanity rules differ between ansible-core lines (each line's ansible-test has its own
# pylint, validate-modules and ignore file, tests/sanity/ignore-X.Y.txt), so CI runs this once
# per tested line (docs/supported-versions.md). The Python the tests run under is the venv's
# (SANITY_PYTHON overrides it).
#
# ansible-test needs the collection under ansible_collections/<namespace>/<name>/, so the files
# git knows about (tracked, and untracked but not ignored) are copied to
# build/sanity/CORE/ansible_collections/gpufleet/tuning first. `--venv` makes ansible-test build its
# own virtual environments; it bootstraps pip with a script it downloads, which this machine
# cannot reach: a stand-in that uses ensurepip is put in ansible-test's cache first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -gt 0 ]; then
  venv=$(cd "$1" && pwd) || { echo "no venv $1 (make venv-2.21 / venv-2.20 creates them)" >&2; exit 2; }
  [ -x "$venv/bin/ansible-test" ] || { echo "$venv has no ansible-test" >&2; exit 2; }
  # the venv first: its ansible-test, and its pythonX.Y for --python
  export PATH="$venv/bin:$PATH" VIRTUAL_ENV="$venv"
fi
python=$(dirname "$(command -v ansible-test)")/python3
[ -x "$python" ] || python=python3
core=$("$python" -c 'from ansible.release import __version__ as v; print(".".join(v.split(".")[:2]))')
python_version=${SANITY_PYTHON:-$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
# one copy per line, so that the lines' runs can go at the same time (suite lanes)
dest="$root/build/sanity/$core/ansible_collections/gpufleet/tuning"
echo "ansible-test sanity: ansible-core $("$python" -c 'from ansible.release import __version__ as v; print(v)'), Python $python_version"
tests=${SANITY_TESTS:-}

rm -rf "$dest"
mkdir -p "$dest"
(cd "$root" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$root" && xargs -0 -I{} cp --parents -P {} "$dest/" 2>/dev/null || true)
# git ls-files lists deleted-but-tracked files too: cp skips them.
# ansible-test lists a collection's files with git when it is in a work tree (build/ is ignored
# by ours), so the copy gets a repository of its own.
(cd "$dest" && git init -q && git add -A)

# The pip bootstrap stand-in, for every pip version this ansible-test may ask for.
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
pip_versions=$("$python" - <<'PY'
import os, re
import ansible_test
path = os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py')
with open(path) as handle:
    print(' '.join(sorted(set(re.findall(r"pip='([0-9.]+)'", handle.read())))))
PY
)
[ -n "$pip_versions" ] || { echo "cannot find the pip version ansible-test bootstraps" >&2; exit 1; }
# Written to a temporary file and renamed: the lines' runs may go at the same time.
for version in $pip_versions; do
  tmp=$(mktemp "$cache/.get_pip.XXXXXX")
  cat > "$tmp" <<'PY'
"""Stand-in for get-pip.py (unreachable here): ensurepip, then pip install the arguments."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade'])
if args:
    subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
PY
  mv -f "$tmp" "$cache/get_pip_${version//./_}.py"
done

cd "$dest"
set -- sanity --venv --python "$python_version" --color no
if [ -n "$tests" ]; then
  for t in $tests; do set -- "$@" --test "$t"; done
fi
ansible-test "$@"
