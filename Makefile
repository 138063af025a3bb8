# pyframe developer targets.  `make help` lists them.
# Interpreters are found by tools/find-python: python3.12/python3.13 on PATH
# if they run, else pyenv's installs.

PY312 := $(shell tools/find-python 3.12)
PY313 := $(shell tools/find-python 3.13)
# tox discovers interpreters on PATH: put the real ones first.
export PATH := $(dir $(PY312)):$(dir $(PY313)):$(PATH)

TOOLS := .venv-tools
VENV := .venv-run

.PHONY: help run test dev lint asan valgrind fuzz bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12

$(TOOLS)/bin/tox:
	$(PY312) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --upgrade pip 'tox>=4.11'

$(VENV)/bin/python:
	$(PY312) -m venv $(VENV)

run: $(VENV)/bin/python  ## build pyframe; run examples/hello.py (print entry locals) and examples/compiled.py (replacement code)
	$(VENV)/bin/pip install --quiet .
	$(VENV)/bin/python examples/hello.py
	$(VENV)/bin/python examples/compiled.py

test: $(TOOLS)/bin/tox  ## run the tests on 3.12 and 3.13, next to TorchDynamo (installs torch 2.13, ~5 GB per version), and lint, as CI does
	$(TOOLS)/bin/tox run -e py312,py313,py312-torch,py313-torch,lint

dev:  ## editable installs in .venv-3.12 and .venv-3.13 for quick pytest runs
	for py in $(PY312) $(PY313); do \
	  v=.venv-$$($$py -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	  $$py -m venv $$v && $$v/bin/pip install --quiet cython setuptools && \
	  PYFRAME_DEBUG=1 PYFRAME_WERROR=1 $$v/bin/pip install --quiet --no-build-isolation -e '.[test]' || exit 1; \
	done

lint: $(TOOLS)/bin/tox  ## ruff, and the C compiled with -Werror
	$(TOOLS)/bin/tox run -e lint

asan:  ## the tests on 3.12 and 3.13 with pyframe built with AddressSanitizer and UBSan
	tools/asan.sh 3.12
	tools/asan.sh 3.13

valgrind:  ## the tests that drive cframe/ hardest under valgrind memcheck, 3.12 and 3.13
	tools/valgrind.sh 3.12
	tools/valgrind.sh 3.13

FUZZ_EXAMPLES ?= 5000
fuzz: dev  ## a long run of the generated-programs test (FUZZ_EXAMPLES=5000) on 3.12 and 3.13
	cd tests && for v in 3.12 3.13; do \
	  PYFRAME_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) ../.venv-$$v/bin/python -m pytest -p no:cacheprovider -q test_generated.py || exit 1; \
	done

bench: $(TOOLS)/bin/tox  ## the overhead benchmark (release builds, 7 rounds) on 3.12 and 3.13; JSON in build/
	$(TOOLS)/bin/tox run -e bench-py312,bench-py313

clean:  ## remove builds, venvs and caches
	rm -rf build dist *.egg-info .tox $(TOOLS) $(VENV) .venv-3.1* .venv-asan-3.1* .venv-valgrind-3.1* pyframe/_cframe.c pyframe/*.so
