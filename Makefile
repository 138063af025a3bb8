# pyframe developer targets.  `make help` lists them.
# Interpreters are found by tools/find-python: python3.X on PATH if it runs,
# else pyenv's install, else (3.14, 3.15) one that tools/provision-python
# installs from Debian's packages under ~/.cache/pyframe.

VERSIONS := 3.11 3.12 3.13 3.14 3.15
empty :=
space := $(empty) $(empty)
comma := ,
PYTHONS := $(foreach v,$(VERSIONS),$(shell tools/find-python $(v)))
ifneq ($(words $(PYTHONS)),$(words $(VERSIONS)))
$(error not every CPython of $(VERSIONS) was found or installed: see tools/find-python's messages above)
endif
PY312 := $(filter %/python3.12,$(PYTHONS))
# tox discovers interpreters on PATH: put the real ones first.
export PATH := $(subst $(space),:,$(foreach p,$(PYTHONS),$(dir $(p)))):$(PATH)
# tox environments: py311 ... py315
TOX_PY := $(subst $(space),$(comma),$(foreach v,$(VERSIONS),py$(subst .,,$(v))))

TOOLS := .venv-tools
VENV := .venv-run

.PHONY: help run test test-torch dev lint dist docs asan valgrind fuzz bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12

$(TOOLS)/bin/tox:
	tools/make-venv $(PY312) $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --upgrade pip 'tox>=4.11'

$(VENV)/bin/python:
	tools/make-venv $(PY312) $(VENV)

run: $(VENV)/bin/python  ## build pyframe; run examples/hello.py (print entry locals) and examples/compiled.py (replacement code)
	$(VENV)/bin/pip install --quiet .
	$(VENV)/bin/python examples/hello.py
	$(VENV)/bin/python examples/compiled.py

# tox environments: py312-spec ... py315-spec (every test in the specialization mode)
TOX_SPEC := $(subst $(space),$(comma),$(foreach v,$(filter-out 3.11,$(VERSIONS)),py$(subst .,,$(v))-spec))

test: $(TOOLS)/bin/tox  ## the tests on 3.11-3.15 (3.12-3.15 also in the specialization mode), against the release wheel where no compiler is, the docs, lint, then test-torch, as CI does
	$(TOOLS)/bin/tox run -e $(TOX_PY),$(TOX_SPEC),wheel,docs,lint
	$(MAKE) test-torch

# Each torch release at least once, 2.15 on every interpreter; real models in
# two envs (tox.ini).  Each env's venv (~5 GB) goes as soon as it has run.
TORCH_ENVS := py311-torch213-models py312-torch211-models py313-torch212 py314-torch214 \
	py311-torch215 py312-torch215 py313-torch215 py314-torch215 py315-torch215

test-torch: $(TOOLS)/bin/tox  ## the TorchDynamo tests, torch 2.11-2.15 (TORCH_ENVS), one env at a time, each venv removed after it
	@failed=; for env in $(TORCH_ENVS); do \
	  $(TOOLS)/bin/tox run -e $$env || failed="$$failed $$env"; rm -rf .tox/$$env; \
	done; test -z "$$failed" || { echo "test-torch failed:$$failed"; exit 1; }

dev:  ## editable installs in .venv-3.11 ... .venv-3.15 for quick pytest runs
	for py in $(PYTHONS); do \
	  v=.venv-$$($$py -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	  tools/make-venv $$py $$v && $$v/bin/pip install --quiet cython 'setuptools>=77' && \
	  PYFRAME_DEBUG=1 PYFRAME_WERROR=1 $$v/bin/pip install --quiet --no-build-isolation -e '.[test]' || exit 1; \
	done

lint: $(TOOLS)/bin/tox  ## ruff, and the C compiled with -Werror
	$(TOOLS)/bin/tox run -e lint

dist: $(TOOLS)/bin/tox  ## the sdist and a manylinux wheel per CPython 3.11-3.15 (release builds, twine-checked) into dist/
	$(TOOLS)/bin/tox run -e dist

docs: $(TOOLS)/bin/tox  ## the documentation site into docs/_build/html (warnings as errors, links checked), and its examples run
	$(TOOLS)/bin/tox run -e docs

asan:  ## the tests on every version with pyframe built with AddressSanitizer and UBSan
	for v in $(VERSIONS); do tools/asan.sh $$v || exit 1; done

valgrind:  ## the tests that drive cframe/ hardest under valgrind memcheck, every version
	for v in $(VERSIONS); do tools/valgrind.sh $$v || exit 1; done

FUZZ_EXAMPLES ?= 5000
FUZZ_DYNAMO_EXAMPLES ?= 20000
fuzz: dev $(TOOLS)/bin/tox  ## long runs of the generated-programs tests: the frame layer's (FUZZ_EXAMPLES=5000) on every version, then torch.compile on pyframe against native (FUZZ_DYNAMO_EXAMPLES=20000, tox -e fuzz-dynamo)
	cd tests && for v in $(VERSIONS); do \
	  PYFRAME_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) ../.venv-$$v/bin/python -m pytest -p no:cacheprovider -q test_generated.py || exit 1; \
	done
	PYFRAME_FUZZ_EXAMPLES=$(FUZZ_DYNAMO_EXAMPLES) $(TOOLS)/bin/tox run -e fuzz-dynamo -- -q

bench: $(TOOLS)/bin/tox  ## the overhead benchmark (release builds, 7 rounds) on every version, and torch.compile'd calls eagerly, natively and on pyframe.dynamo on every version (bench-dynamo-py3XX); JSON in build/
	$(TOOLS)/bin/tox run -e $(subst py,bench-py,$(TOX_PY)),$(subst py,bench-dynamo-py,$(TOX_PY))

clean:  ## remove builds, venvs and caches
	rm -rf build dist *.egg-info .tox $(TOOLS) $(VENV) .venv-3.1* .venv-asan-3.1* .venv-valgrind-3.1* pyframe/_cframe.c pyframe/*.so docs/_build
