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
SCENARIOS ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))

.PHONY: all setup venv collection images lint sanity vermin unit molecule test build clean

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

sanity: setup
	scripts/ansible-test-sanity.sh

vermin: setup
	vermin --no-tips --violations -t=3.8- --backport argparse plugins/modules plugins/module_utils

unit: setup
	pytest -q tests/unit

molecule: setup
	@test -n "$(SCENARIOS)" || { echo "no Molecule scenarios found"; exit 1; }
	for scenario in $(SCENARIOS); do molecule test -s $$scenario || exit 1; done

test: lint sanity vermin unit build
	$(MAKE) images IMAGES=$(MOLECULE_DISTRO)
	$(MAKE) molecule

build: setup
	mkdir -p build
	ansible-galaxy collection build --force --output-path build .

clean:
	rm -rf build tests/output .cache
