#!/usr/bin/env bash
# Run `ansible-test sanity` on the collection.
#
# ansible-test needs the collection under ansible_collections/<namespace>/<name>/, so the files
# git knows about (tracked, and untracked but not ignored) are copied to
# build/sanity/ansible_collections/gpufleet/tuning first. `--venv` makes ansible-test build its
# own virtual environments; it bootstraps pip with a script it downloads, which this machine
# cannot reach: a stand-in that uses ensurepip is put in ansible-test's cache first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/build/sanity/ansible_collections/gpufleet/tuning"
python_version=${SANITY_PYTHON:-$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
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
pip_versions=$(python3 - <<'PY'
import os, re
import ansible_test
path = os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py')
with open(path) as handle:
    print(' '.join(sorted(set(re.findall(r"pip='([0-9.]+)'", handle.read())))))
PY
)
[ -n "$pip_versions" ] || { echo "cannot find the pip version ansible-test bootstraps" >&2; exit 1; }
for version in $pip_versions; do
  cat > "$cache/get_pip_${version//./_}.py" <<'PY'
"""Stand-in for get-pip.py (unreachable here): ensurepip, then pip install the arguments."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade'])
if args:
    subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
PY
done

cd "$dest"
set -- sanity --venv --python "$python_version" --color no
if [ -n "$tests" ]; then
  for t in $tests; do set -- "$@" --test "$t"; done
fi
ansible-test "$@"
