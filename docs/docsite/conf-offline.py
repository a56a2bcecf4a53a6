# Appended by `make docs` to the conf.py that `antsibull-docs sphinx-init` writes in build/docsite.
# The build needs no network: no intersphinx inventories (docs.ansible.com, docs.python.org), so
# references to other collections and to Ansible's own docs (ansible.builtin modules,
# common_return_values) stay plain text instead of links. References into this collection are
# still checked: Sphinx runs with -W (nitpicky) and only these outside targets are ignored.
intersphinx_mapping = {}
nitpick_ignore_regex = [
    ('std:ref', r'(?!ansible_collections\.gpufleet\.tuning\.).*'),
]
