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

.PHONY: all setup venv collection images lint sanity vermin unit unit-py38 rules molecule test build clean demo demo-test lab-up lab-down bench bench-job bench-job-contexts wheelhouse torch-image test-reliability test-vm planted-causes test-generations test-debian13 suites demo-watch bench-watch bench-profile ee ee-test test-pull changelog graph docs-gen eda

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

# Every image of IMAGES at once (each its own debootstrap directory, its log in build/): the
# downloads and the unpacking overlap where CI starts with none of them built.
images:
	@mkdir -p build; pids=; for distro in $(IMAGES); do \
	  images/build-node-image.sh $$distro >build/image-$$distro.log 2>&1 & pids="$$pids $$!"; done; \
	rc=0; for pid in $$pids; do wait $$pid || rc=1; done; \
	for distro in $(IMAGES); do sed "s/^/$$distro: /" build/image-$$distro.log; done; exit $$rc

lint: setup
	ansible-lint --profile production
	antsibull-changelog lint
	$(DOCS_LINT)

# The collection's docsite (docs/modules/README.md): antsibull-docs writes RST from the plugins'
# DOCUMENTATION, EXAMPLES and RETURN (doc fragments included) and the roles'
# meta/argument_specs.yml, Sphinx builds build/docsite/build/html/index.html from it. Both fail
# on any error or warning (docs/docsite/conf-offline.py: no network, links into other
# collections stay text). `make lint` runs DOCS_LINT: schema, markup and references (to this
# collection and to ansible.builtin) of every plugin and role, and rstcheck of the pages.
.PHONY: docs
DOCSITE := $(ROOT)/build/docsite
DOCS_LINT = antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs dependent \
  --disallow-unknown-collection-refs --check-extra-docs-refs .
docs: setup
	rm -rf $(DOCSITE) && mkdir -p $(DOCSITE)
	antsibull-docs sphinx-init --use-current --fail-on-error --project gpufleet.tuning \
	  --title gpufleet.tuning --dest-dir $(DOCSITE) gpufleet.tuning
	cat docs/docsite/conf-offline.py >> $(DOCSITE)/conf.py
	$(DOCSITE)/build.sh
	@echo "docsite: $(DOCSITE)/build/html/index.html"

# CHANGELOG.md from changelogs/changelog.yaml (antsibull-changelog; fragments in
# changelogs/fragments/ are folded in by `antsibull-changelog release --version X` at a release).
changelog: setup
	antsibull-changelog generate

sanity: setup
	scripts/ansible-test-sanity.sh

# The newer ansible-core lines (docs/supported-versions.md): 2.20 and 2.21 need a controller
# Python >= 3.12, so their venvs are made with pyenv's 3.12 / 3.13 (on these machines, CI's
# included), else a python3.12 / python3.13 on PATH. .venv-2.21 (requirements-core2.21.txt:
# ansible 14, Molecule, testinfra) runs its sanity, the unit tests and the scenarios of
# NEWEST_LINE_SCENARIOS; .venv-2.20 (requirements-core2.20.txt) its sanity only.
NEWEST_LINE := 2.21
PYENV_ROOT ?= $(HOME)/.pyenv
PY313 ?= $(firstword $(wildcard $(PYENV_ROOT)/versions/3.13*/bin/python3.13) $(shell command -v python3.13 2>/dev/null))
PY312 ?= $(firstword $(wildcard $(PYENV_ROOT)/versions/3.12*/bin/python3.12) $(shell command -v python3.12 2>/dev/null))
PY_2.21 ?= $(or $(PY313),$(PY312))
PY_2.20 ?= $(or $(PY312),$(PY313))
.PHONY: venv-2.20 venv-2.21 sanity-2.20 sanity-2.21 unit-2.21
venv-2.20: $(ROOT)/.venv-2.20/.installed
venv-2.21: $(ROOT)/.venv-2.21/.installed
$(ROOT)/.venv-%/.installed: requirements-core%.txt
	@test -n "$(PY_$*)" || { echo "venv-$*: ansible-core $* needs Python 3.12 or 3.13 (pyenv install 3.13)"; exit 1; }
	rm -rf $(ROOT)/.venv-$*
	$(PY_$*) -m venv $(ROOT)/.venv-$*
	$(ROOT)/.venv-$*/bin/pip install -q --upgrade pip
	$(ROOT)/.venv-$*/bin/pip install -q -r $<
	touch $@

sanity-2.20 sanity-2.21: sanity-%: venv-% collection
	scripts/ansible-test-sanity.sh $(ROOT)/.venv-$*

unit-2.21: venv-2.21 collection
	$(ROOT)/.venv-2.21/bin/python -m pytest -q -p no:cacheprovider tests/unit

# The options' documentation that Ansible reads as static YAML (the generated part of the
# modules' DOCUMENTATION and of roles/limits/meta/argument_specs.yml), from their declarations
# (plugins/module_utils/options.py and the contexts' records). A unit test fails when it is stale.
docs-gen: collection
	$(BIN)/python scripts/gen_option_docs.py

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

# ansible-rulebook in a venv of its own (requirements-eda.txt), for the watch scenario's alert ->
# re-tune test (extensions/eda/rulebooks/); it needs a Java 17+ runtime (scripts/bootstrap-host.sh).
EDA_VENV := $(ROOT)/build/eda-venv
eda: $(EDA_VENV)/.installed
$(EDA_VENV)/.installed: requirements-eda.txt
	$(PYTHON) -m venv $(EDA_VENV)
	$(EDA_VENV)/bin/pip install -q -r requirements-eda.txt
	touch $@

# LANES jobs at a time (scripts/run_suites.py: a node name and Molecule state of their own per
# job, logs and wall times in build/suites/). LANES=1 runs one after the other.
LANES ?= 2
SUITES := $(PYTHON) scripts/run_suites.py --lanes $(LANES) --default-distro $(MOLECULE_DISTRO)

molecule: setup eda
	@test -n "$(SCENARIOS)" || { echo "no Molecule scenarios found"; exit 1; }
	$(SUITES) $(foreach s,$(SCENARIOS),molecule:$(MOLECULE_DISTRO):$(s))

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
GENERATION_ENV = $(foreach d,$(GENERATIONS),--distro-env $(d):PAM_DIFFERENTIAL_CASES=$(GENERATION_CASES) \
  --distro-env $(d):SYSTEMD_DIFFERENTIAL_CASES=$(GENERATION_CASES))
GENERATION_JOBS = $(foreach d,$(GENERATIONS),$(foreach s,$(or $(SCENARIOS_$(d)),$(SCENARIOS_debian13)),molecule:$(d):$(s)))
test-generations: setup
	$(MAKE) images IMAGES="$(GENERATIONS)"
	$(SUITES) $(GENERATION_ENV) $(GENERATION_JOBS)

test-debian13: setup
	$(MAKE) test-generations GENERATIONS=debian13 GENERATION_CASES=10

# The reliability suite (docs/reliability.md): bad input, interrupted writes, check mode,
# rollback, dockerd under when_idle (Molecule scenario), then a 4-node fleet with one node down
# and one failing (its own lab, gpufleet-rel-*). Needs the node image (make images).
test-reliability: setup
	molecule test -s reliability
	tests/reliability/fleet_test.sh

# The VM lane (docs/vm-lane.md, issue 43): the collection on real kernels in qemu VMs (KVM where
# a test boot proves it works, else TCG), reached over SSH: tune, reboot, the audit after boot,
# the kernel ceilings applied and predicted, cgroup v2 and v1. Base disk per distro built by
# debootstrap and cached in build/vm/. Needs root, qemu-system-x86 and qemu-utils
# (scripts/bootstrap-host.sh). `make test-vm VM_DISTROS="debian12 debian11" VM_CGROUPS=v1`.
VM_DISTROS ?= debian12
VM_CGROUPS ?= v2 v1
test-vm: setup
	VM_DISTROS="$(VM_DISTROS)" VM_CGROUPS="$(VM_CGROUPS)" tests/vm/run-lane.sh

# The planted-causes generator of the reliability scenario alone, with more layouts
# (docs/reliability.md): its own node (gpufleet-reliability-planted-causes), created, converged,
# LAYOUTS layouts from SEED (default: from the clock; the run prints it), destroyed.
# `make planted-causes LAYOUTS=200`; replay one layout: `make planted-causes SEED=N LAYOUTS=1`.
LAYOUTS ?= 30
SEED ?=
PLANTED_DIR = $(CURDIR)/build/molecule/planted-causes
planted-causes: setup
	export MOLECULE_EPHEMERAL_DIRECTORY=$(PLANTED_DIR) GPUFLEET_NODE_SUFFIX=-planted-causes; \
	molecule create -s reliability && molecule converge -s reliability && \
	(cd molecule/reliability && ANSIBLE_CONFIG=$(PLANTED_DIR)/ansible.cfg \
	  PLANTED_LAYOUTS=$(LAYOUTS) PLANTED_SEED=$(SEED) pytest -p no:cacheprovider -rxX \
	  --connection=ansible --ansible-inventory=$(PLANTED_DIR)/inventory/ansible_inventory.yml \
	  tests/test_planted_causes.py); rc=$$?; molecule destroy -s reliability; exit $$rc

# Every node suite of CI in one run of LANES lanes: the scenarios on MOLECULE_DISTRO, the
# reliability scenario and fleet test, the other generations, the demo check, the VM lane
# (vm-DISTRO: both cgroup layouts in one job, docs/vm-lane.md). Longest first
# (the order below is by the wall times measured here; build/suites/timings.json once known).
# NEWEST_LINE_SCENARIOS and the reliability suite's fleet test run with ansible-core NEWEST_LINE
# (molecule@2.21:..., its venv's tools), the others with the pinned 2.19 of .venv: each scenario
# runs on one line. The 2.20 and 2.21 sanity runs and the unit tests under 2.21 are jobs of the
# lanes too (make sanity, on 2.19, runs before).
NEWEST_LINE_SCENARIOS ?= default pam reliability kubernetes
line_of = $(if $(filter $(1),$(NEWEST_LINE_SCENARIOS)),molecule@$(NEWEST_LINE),molecule)
SUITE_JOBS = $(foreach s,$(SCENARIOS) reliability,$(call line_of,$(s)):$(MOLECULE_DISTRO):$(s)) \
  $(GENERATION_JOBS) \
  '$(if $(filter reliability,$(NEWEST_LINE_SCENARIOS)),cmd@$(NEWEST_LINE),cmd):fleet-test:tests/reliability/fleet_test.sh' \
  'cmd:demo-test:$(MAKE) demo-test' 'cmd:test-pull:$(MAKE) test-pull' \
  'cmd:sanity-2.20:$(MAKE) sanity-2.20' 'cmd:sanity-2.21:$(MAKE) sanity-2.21' \
  'cmd:unit-2.21:$(MAKE) unit-2.21' \
  $(foreach d,$(VM_DISTROS),'cmd:vm-$(d):VM_DISTROS=$(d) VM_CGROUPS="$(VM_CGROUPS)" tests/vm/run-lane.sh')
# The reliability scenario's planted-causes layouts per CI run (its seed comes from the clock,
# so each run plants other layouts; `make planted-causes LAYOUTS=200` runs many on demand):
# 12 of the test's default 30 keep CI under its hour with the VM lane (docs/testing.md).
CI_PLANTED_LAYOUTS ?= 12
suites: setup eda venv-2.20 venv-2.21
	$(MAKE) images IMAGES="$(MOLECULE_DISTRO) $(GENERATIONS)"
	$(MAKE) torch-image
	$(SUITES) $(GENERATION_ENV) --distro-env $(MOLECULE_DISTRO):PLANTED_LAYOUTS=$(CI_PLANTED_LAYOUTS) \
	  $(SUITE_JOBS)

test: lint docs sanity vermin unit unit-py38 rules build
	$(MAKE) ee
	$(MAKE) suites

build: setup
	mkdir -p build
	ansible-galaxy collection build --force --output-path build .

# Fleet-scale benchmark: ping floor, the usual approach and tune_gpu_nodes.yml --tags limits on
# NODES lab nodes, over TRANSPORTS (ssh, the main series; docker; mitogen, from its own venv
# build/mitogen-venv). `make bench NODES=4` is the quick run. Each run is a dated series
# (benchmarks/results-DATE-nN-TRANSPORTS-HHMM.json, .md; BENCH_LABEL adds a word); the newest
# is copied to benchmarks/results.json and results.md (the headline) and listed with every
# other in benchmarks/fleet-history.md. BENCH_PREFIX names the lab's containers (default
# gpufleet-bench).
NODES ?= 4 16 32
REPEAT ?= 3
TRANSPORTS ?= ssh docker mitogen
MITOGEN_VERSION ?= 0.3.54
MITOGEN_VENV := $(ROOT)/build/mitogen-venv
$(MITOGEN_VENV)/.installed:
	$(PYTHON) -m venv $(MITOGEN_VENV)
	$(MITOGEN_VENV)/bin/pip install -q mitogen==$(MITOGEN_VERSION) $$(grep '^ansible-core==' requirements-dev.txt)
	touch $@
bench: setup $(MITOGEN_VENV)/.installed
	bash scripts/bootstrap-host.sh
	$(MAKE) images IMAGES=debian12
	images/build-ssh-image.sh debian12
	MITOGEN_VENV=$(MITOGEN_VENV) python3 scripts/bench.py --nodes "$(NODES)" --repeat $(REPEAT) --transports "$(TRANSPORTS)"

# Where the rerun's and the audit's time goes, against the ping floor (issue 42 item 1;
# benchmarks/profile.md, profile.json): PROFILE_NODES lab nodes over SSH (bench.py's lab,
# BENCH_PREFIX), PROFILE_RUNS plain runs per phase (controller and node CPU, per task through
# benchmarks/callback_plugins/task_cpu.py) and as many under py-spy, from its own venv.
PROFILE_NODES ?= 4
PROFILE_RUNS ?= 3
PY_SPY_VERSION ?= 0.4.3
PROFILE_VENV := $(ROOT)/build/profile-venv
$(PROFILE_VENV)/.installed:
	$(PYTHON) -m venv $(PROFILE_VENV)
	$(PROFILE_VENV)/bin/pip install -q py-spy==$(PY_SPY_VERSION)
	touch $@
bench-profile: setup $(PROFILE_VENV)/.installed
	bash scripts/bootstrap-host.sh
	$(MAKE) images IMAGES=debian12
	images/build-ssh-image.sh debian12
	PYSPY=$(PROFILE_VENV)/bin/py-spy python3 benchmarks/profile_run.py --nodes $(PROFILE_NODES) --runs $(PROFILE_RUNS)

# Fleet paths (issue 15, docs/fleet-scale.md). `make ee`: the execution environment's build
# context (ansible-builder create; CI). `make ee-test`: build the EE image on a locally built base
# and run tune_gpu_nodes.yml from inside it against a lab node over SSH (not in CI: the build
# downloads from PyPI). `make test-pull`: a lab node tunes itself with ansible-pull from a local
# git repository and reruns as a no-op (CI).
EE_DIR := $(ROOT)/build/ee
BUILDER_VERSION ?= 3.2.0
BUILDER_VENV := $(ROOT)/build/builder-venv
$(BUILDER_VENV)/.installed:
	$(PYTHON) -m venv $(BUILDER_VENV)
	$(BUILDER_VENV)/bin/pip install -q ansible-builder==$(BUILDER_VERSION)
	touch $@
# The EE is on the newest line (ansible-core of requirements-core2.21.txt, which
# execution-environment.yml must pin too) with the Debian 13 base's Python 3.13: the wheels come
# from .venv-2.21's pip (Python 3.13).
EE_CORE = $(shell grep '^ansible-core==' requirements-core$(NEWEST_LINE).txt)
ee: build $(BUILDER_VENV)/.installed venv-$(NEWEST_LINE)
	grep -q 'package_pip: $(EE_CORE)$$' execution-environment.yml \
	  || { echo "execution-environment.yml does not pin $(EE_CORE)"; exit 1; }
	mkdir -p $(EE_DIR)
	cp "$$(ls -t build/gpufleet-tuning-*.tar.gz | head -1)" $(EE_DIR)/gpufleet-tuning.tar.gz
	$(ROOT)/.venv-$(NEWEST_LINE)/bin/pip download -q -d $(EE_DIR)/wheels --only-binary=:all: $(EE_CORE) \
	  ansible-runner bindep pyyaml packaging jinja2 dumb-init==1.2.5 setuptools wheel
	$(BUILDER_VENV)/bin/ansible-builder create -f execution-environment.yml -c $(EE_DIR)/context --output-filename Containerfile
	test -s $(EE_DIR)/context/Containerfile

ee-test: ee
	images/build-ssh-image.sh debian12
	$(MAKE) images IMAGES=debian13
	images/build-ee-base-image.sh debian13
	tests/fleet/ee_test.sh

test-pull: setup
	images/build-ssh-image.sh debian12
	tests/fleet/ansible_pull_test.sh

# The job-shape demand model against measurements (benchmarks/job-demand.md); needs a python
# with torch: make bench-job TORCH_PYTHON=/path/to/python
bench-job: collection
	@test -n "$(TORCH_PYTHON)" || { echo "set TORCH_PYTHON to a python with torch"; exit 1; }
	python3 scripts/bench_job_demand.py --python "$(TORCH_PYTHON)"

# The wheelhouse of torch 2.13.0 (CPU, Python 3.11), numpy and Pillow that the nodes install
# from (the pytorch scenario and the demo), and the container image with python and torch built
# from it without a registry (images/build-torch-image.sh, kept once built).
WHEELHOUSE := $(ROOT)/build/wheelhouse/torch-2.13.0-cp311
wheelhouse: $(WHEELHOUSE)/.complete-pillow
$(WHEELHOUSE)/.complete-pillow: | $(VENV)/.installed
	$(BIN)/pip download -q --disable-pip-version-check --only-binary=:all: --python-version=3.11 \
	  --platform=manylinux_2_28_x86_64 --dest=$(WHEELHOUSE) torch==2.13.0 numpy pillow
	echo "torch==2.13.0 numpy pillow" > $@
torch-image: wheelhouse
	WHEELHOUSE=$(WHEELHOUSE) images/build-torch-image.sh

# The DataLoader check's cost per context (login, service, container) and the job before and
# after tuning, from the demo's job (benchmarks/job-contexts.md, .json).
bench-job-contexts:
	$(MAKE) demo
	python3 scripts/bench_job_contexts.py $(LAB)
	$(MAKE) lab-down

# The drift watch on the `watch` scenario's node (node_exporter, Prometheus, a 20 s timer):
# make demo-watch shows an alert fire on drift and clear on re-tune; make bench-watch measures
# one node-side audit in all and per part (each probe, the readers, the units, the kernel
# ceilings, the entry point: benchmarks/watch-cost.md). Both remove the node at the end.
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
# LAB_PREFIX names the lab's containers (PREFIX-1..N) and LAB_DIR holds its inventory, reports,
# job results and picture (lab/lab.sh, lab/demo_job.sh): `make demo LAB_PREFIX=mine
# LAB_DIR=/tmp/mine` runs a lab of its own beside another user's on a shared host, and `make
# lab-down` with the same two removes it. Given on the command line or in the environment;
# passed to the lab's scripts explicitly (not exported to every target: the suites and the
# fleet tests pick their own).
LAB_PREFIX ?= gpufleet-lab
LAB_DIR ?= $(ROOT)/build/lab
LAB := $(abspath $(LAB_DIR))
LAB_ENV = LAB_PREFIX='$(LAB_PREFIX)' LAB_DIR='$(LAB)'
LAB_INVENTORY = $(LAB)/inventory.yml
# the lab-down command for this lab: the defaults' need no arguments
LAB_ARGS = $(if $(filter-out gpufleet-lab,$(LAB_PREFIX)), LAB_PREFIX='$(LAB_PREFIX)')$(if $(filter-out $(ROOT)/build/lab,$(LAB)), LAB_DIR='$(LAB)')
demo:
	bash scripts/bootstrap-host.sh
	$(MAKE) setup
	$(MAKE) images IMAGES=debian12
	$(MAKE) torch-image
	LAB_SLURM_NODES=$${LAB_SLURM_NODES:-1} LAB_K8S_NODES=$${LAB_K8S_NODES:-1} $(MAKE) lab-up$(LAB_ARGS)
	$(LAB_ENV) lab/demo_job.sh node
	ansible-playbook -i $(LAB_INVENTORY) playbooks/audit_limits.yml -e audit_reports_dir=$(LAB)/before
	$(LAB_ENV) lab/demo_job.sh before
	ansible-playbook -i $(LAB_INVENTORY) playbooks/tune_gpu_nodes.yml --tags limits
	$(LAB_ENV) lab/demo_job.sh after
	ansible-playbook -i $(LAB_INVENTORY) playbooks/audit_limits.yml -e audit_reports_dir=$(LAB)/after
	@echo; echo "=== before ==="; cat $(LAB)/before/limits-audit.md
	@echo; echo "=== after ==="; cat $(LAB)/after/limits-audit.md
	@echo; python3 scripts/bench_job_contexts.py --show $(LAB)
	@echo; $(BIN)/python scripts/plot_throughput.py $(LAB)
	@echo; echo "make lab-down$(LAB_ARGS) removes the lab"

# The README's lab blocks as a new user runs them (scripts/docs_check.py: the blocks marked
# <!-- run: demo-test -->: make demo, then a second lab as "your own inventory", tuned with the
# README's three lines), then check the demo's audits, job and plot, and remove the lab.
demo-test:
	python3 scripts/docs_check.py run demo-test || { LAB_PREFIX=gpufleet-mine LAB_DIR=$(ROOT)/build/mine lab/lab.sh down; exit 1; }
	python3 scripts/check_demo.py $(LAB)
	$(MAKE) lab-down$(LAB_ARGS)

lab-up: setup
	$(LAB_ENV) lab/lab.sh up

lab-down:
	$(LAB_ENV) lab/lab.sh down

clean:
	rm -rf build tests/output .cache

# The layers and import graph of plugins/module_utils in docs/contexts.md (checked by
# tests/unit/scripts/test_module_utils_graph.py).
graph:
	python3 scripts/module_utils_graph.py --write
