# gpufleet.tuning: set-up, tests, images, lab.
# `make test` runs everything CI runs. See README.md.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
ROOT := $(abspath .)
VENV := $(ROOT)/.venv
BIN := $(VENV)/bin
PYTHON ?= python3
COLL := $(ROOT)/build/collections
export ANSIBLE_COLLECTIONS_PATH := $(COLL)
export ANSIBLE_FORCE_COLOR := 0
export PATH := $(BIN):$(PATH)
IMAGES ?= debian12 debian11
# The image the Molecule scenarios run on (users with a registry: ubuntu2004, rockylinux9, ...).
MOLECULE_DISTRO ?= debian12
export MOLECULE_DISTRO
export MOLECULE_IMAGE ?= gpufleet-node:$(MOLECULE_DISTRO)
# Every scenario but reliability, which `make test-reliability` runs with its fleet test.
SCENARIOS ?= $(filter-out reliability,$(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml)))))

.PHONY: all setup venv collection images lint changelog sanity vermin unit unit-py38 rules molecule test build clean demo demo-test lab-up lab-down bench bench-job test-reliability test-generations test-debian13 demo-watch bench-watch

all: test

setup: venv collection

venv: $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

# The collection seen by ansible-playbook, Molecule and pytest: a link to this checkout.
collection: $(COLL)/ansible_collections/gpufleet/tuning
$(COLL)/ansible_collections/gpufleet/tuning:
	mkdir -p $(dir $@)
	ln -sfn $(ROOT) $@

images:
	for distro in $(IMAGES); do images/build-node-image.sh $$distro; done

lint: setup
	ansible-lint --profile production
	antsibull-changelog lint

# CHANGELOG.md from changelogs/changelog.yaml (antsibull-changelog; fragments in
# changelogs/fragments/ are folded in by `antsibull-changelog release --version X` at a release).
changelog: setup
	antsibull-changelog generate

sanity: setup
	scripts/ansible-test-sanity.sh

vermin: setup
	vermin --no-tips --violations -t=3.8- --backport argparse plugins/modules plugins/module_utils

unit: setup
	pytest -q tests/unit

# The unit tests again under Python 3.8 (module code runs on 3.8 targets), with the 3.8 that
# pyenv provides on these machines; skipped, saying so, where there is none.
PY38 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.8*/bin/python3.8) $(shell command -v python3.8 2>/dev/null))
unit-py38: collection
	@if [ -z "$(PY38)" ]; then echo "unit-py38: skipped, no Python 3.8 here (pyenv install 3.8)"; exit 0; fi; \
	if [ ! -f .venv38/.installed ] || [ requirements-py38.txt -nt .venv38/.installed ]; then \
	  $(PY38) -m venv .venv38 && .venv38/bin/pip install -q -r requirements-py38.txt && touch .venv38/.installed; fi; \
	.venv38/bin/python -m pytest -q -p no:cacheprovider tests/unit

# The drift watch's alert rules (roles/limits_watch/files/): promtool check and unit tests.
# promtool comes with Debian's prometheus package (scripts/bootstrap-host.sh installs it).
PROMTOOL ?= promtool
RULES := roles/limits_watch/files/gpufleet-limits.rules.yml
rules:
	$(PROMTOOL) check rules $(RULES)
	$(PROMTOOL) test rules tests/prometheus/gpufleet-limits.rules.test.yml

molecule: setup
	@test -n "$(SCENARIOS)" || { echo "no Molecule scenarios found"; exit 1; }
	for scenario in $(SCENARIOS); do molecule test -s $$scenario || exit 1; done

# The pam, systemd and docker scenarios on a Debian 13 (trixie) node (Linux-PAM 1.7, systemd 257,
# Podman 5) with fewer random layouts: about 15 minutes here (pam 4, systemd 7, docker 4).
# Not part of `make test` (CI time); run it when a parser or a scenario changes.
# The pam, systemd and docker scenarios, differential tests included, on the other Debian
# generations (Debian 11: PAM 1.4, systemd 247, Podman 3.0; Debian 13: PAM 1.7, systemd 257,
# Podman 5) with fewer random layouts than on Debian 12; part of make test. GENERATIONS picks
# the images. On Debian 11 podman_ulimits edits containers.conf (Podman 3.0 reads no drop-in).
GENERATIONS ?= debian11 debian13
GENERATION_CASES ?= 6
SCENARIOS_debian11 ?= pam systemd docker
SCENARIOS_debian13 ?= pam systemd docker
test-generations: setup
	for distro in $(GENERATIONS); do \
	  $(MAKE) images IMAGES=$$distro || exit 1; \
	  PAM_DIFFERENTIAL_CASES=$(GENERATION_CASES) SYSTEMD_DIFFERENTIAL_CASES=$(GENERATION_CASES) \
	    $(MAKE) molecule MOLECULE_DISTRO=$$distro MOLECULE_IMAGE=gpufleet-node:$$distro \
	    SCENARIOS="$$(case $$distro in debian11) echo '$(SCENARIOS_debian11)';; \
	                 *) echo '$(SCENARIOS_debian13)';; esac)" || exit 1; \
	done

test-debian13: setup
	$(MAKE) test-generations GENERATIONS=debian13 GENERATION_CASES=10

# The reliability suite (docs/reliability.md): bad input, interrupted writes, check mode,
# rollback, dockerd under when_idle (Molecule scenario), then a 4-node fleet with one node down
# and one failing (its own lab, gpufleet-rel-*). Needs the node image (make images).
test-reliability: setup
	molecule test -s reliability
	tests/reliability/fleet_test.sh

test: lint sanity vermin unit unit-py38 rules build
	$(MAKE) images IMAGES=$(MOLECULE_DISTRO)
	$(MAKE) molecule
	$(MAKE) test-reliability
	$(MAKE) test-generations
	$(MAKE) demo-test

build: setup
	mkdir -p build
	ansible-galaxy collection build --force --output-path build .

# Fleet-scale benchmark (benchmarks/results.md, results.json): ping floor, the usual approach and
# tune_gpu_nodes.yml --tags limits on NODES lab nodes. `make bench NODES=4` is the quick run.
NODES ?= 4 16 32
REPEAT ?= 3
bench: setup
	bash scripts/bootstrap-host.sh
	$(MAKE) images IMAGES=debian12
	python3 scripts/bench.py --nodes "$(NODES)" --repeat $(REPEAT)

# The job-shape demand model against measurements (benchmarks/job-demand.md); needs a python
# with torch: make bench-job TORCH_PYTHON=/path/to/python
bench-job: collection
	@test -n "$(TORCH_PYTHON)" || { echo "set TORCH_PYTHON to a python with torch"; exit 1; }
	python3 scripts/bench_job_demand.py --python "$(TORCH_PYTHON)"

# The drift watch on the `watch` scenario's node (node_exporter, Prometheus, a 20 s timer):
# make demo-watch shows an alert fire on drift and clear on re-tune; make bench-watch measures
# one node-side audit (benchmarks/watch-cost.md). Both remove the node at the end.
RUNS ?= 10
demo-watch: setup
	molecule converge -s watch
	scripts/demo_watch.sh || { molecule destroy -s watch; exit 1; }
	molecule destroy -s watch

bench-watch: setup
	molecule converge -s watch
	python3 benchmarks/watch_cost.py --container gpufleet-watch$${GPUFLEET_NODE_SUFFIX:-} --runs $(RUNS) \
	  || { molecule destroy -s watch; exit 1; }
	molecule destroy -s watch

# The local lab: three node containers, audit before, tune, audit after (README's first command).
LAB_INVENTORY := $(ROOT)/build/lab/inventory.yml
demo:
	bash scripts/bootstrap-host.sh
	$(MAKE) setup
	$(MAKE) images IMAGES=debian12
	$(MAKE) lab-up
	ansible-playbook -i $(LAB_INVENTORY) playbooks/audit_limits.yml -e audit_reports_dir=$(ROOT)/build/lab/before
	ansible-playbook -i $(LAB_INVENTORY) playbooks/tune_gpu_nodes.yml --tags limits
	ansible-playbook -i $(LAB_INVENTORY) playbooks/audit_limits.yml -e audit_reports_dir=$(ROOT)/build/lab/after
	@echo; echo "=== before ==="; cat build/lab/before/limits-audit.md
	@echo; echo "=== after ==="; cat build/lab/after/limits-audit.md
	@echo; echo "make lab-down removes the lab"

# make demo, then check its audits (gaps before, none after) and remove the lab.
demo-test:
	$(MAKE) demo
	python3 scripts/check_demo.py build/lab
	$(MAKE) lab-down

lab-up: setup
	lab/lab.sh up

lab-down:
	lab/lab.sh down

clean:
	rm -rf build tests/output .cache
