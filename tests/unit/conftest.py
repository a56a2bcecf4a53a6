"""Make the collection importable as ansible_collections.gpufleet.tuning from this checkout."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
COLLECTIONS = os.path.join(ROOT, 'build', 'collections')
LINK = os.path.join(COLLECTIONS, 'ansible_collections', 'gpufleet', 'tuning')

if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(ROOT, LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


def run_module_file(module, tmp_path, args, timeout=60):
    """plugins/modules/MODULE.py run as Ansible runs it (an args file), on this machine: its
    JSON result."""
    import json
    import subprocess
    argsfile = tmp_path / 'args.json'
    argsfile.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules', module + '.py'),
                           str(argsfile)], env=dict(os.environ, PYTHONPATH=COLLECTIONS),
                          check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout)
    start = proc.stdout.find('{')
    assert start >= 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout[start:])
