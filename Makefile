# Entry points for people and CI. `make demo` and `make test` set up everything they need on a Debian 12 host
# (root): system packages, binfmt for arm64 containers, the Python venv, the test images.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= $(CURDIR)/.venv
PYTHON ?= /usr/bin/python3
# make molecule SCENARIO=cann runs one scenario (or several: SCENARIO="cann site"); empty runs them all.
SCENARIO ?=
TOOLS := $(CURDIR)/tools
# Ansible finds this checkout as the collection kunpeng_ascend.vllm through this link.
COLLECTION_LINK := .cache/ansible_collections/kunpeng_ascend/vllm
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.cache
export MOLECULE_GLOB := molecule/*/molecule.yml
export PATH := $(VENV)/bin:$(PATH)

.PHONY: help demo demo-clean test test-fast host venv images link lint sanity units build molecule bench role-docs clean

help:
	@echo "make demo       build a simulated Kunpeng + Ascend node and run playbooks/site.yml against it"
	@echo "make test       everything CI runs: host set-up check, lint, sanity, unit tests, collection build, Molecule"
	@echo "make test-fast  the edit-test loop: lint, sanity, unit tests, collection build (no containers)"
	@echo "make units | lint | sanity | build | molecule [SCENARIO=name] | bench | role-docs | demo-clean | clean"

demo: host venv images link
	$(TOOLS)/demo.sh

demo-clean: venv link
	$(TOOLS)/demo.sh --clean

test: host venv images link
	$(TOOLS)/run-tests.sh

test-fast: venv link
	$(TOOLS)/run-tests.sh lint sanity units build

host:
	$(TOOLS)/host-setup.sh

# A changed requirements.txt rebuilds the venv, so that a dropped package does not linger in it.
$(VENV)/.installed: requirements.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

venv: $(VENV)/.installed

images:
	$(TOOLS)/build-images.sh arm64 amd64

link:
	@mkdir -p $(dir $(COLLECTION_LINK))
	@test -L $(COLLECTION_LINK) || ln -s ../../.. $(COLLECTION_LINK)

lint: venv link
	$(TOOLS)/run-tests.sh lint

sanity: venv link
	$(TOOLS)/run-tests.sh sanity

units: venv link
	$(TOOLS)/run-tests.sh units

build: venv link
	$(TOOLS)/run-tests.sh build

molecule: venv images link
	MOLECULE_SCENARIOS="$(SCENARIO)" $(TOOLS)/run-tests.sh molecule

role-docs: venv
	python tools/role_docs.py

bench: venv link
	python tests/benchmarks/npu_smi_calls.py

clean: demo-clean
	rm -rf .cache tests/output kunpeng_ascend-vllm-*.tar.gz
