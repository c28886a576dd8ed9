# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: run test figures venv deps cbuild docs bench clean

$(STAMP): setup.cfg pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[test,plot,progress,dask,parquet]'
	touch $(STAMP)

venv: $(STAMP)

# The main job: the thesis's one-packet μserver sweep (accept-limit 1, 10, inf;
# 10,000-30,000 req/s) -> out/results.csv and out/throughput.png.
run: $(STAMP)
	$(VENV)/bin/simaccept sweep scenarios/thesis/userver-onepacket.toml --jobs $(JOBS) --out out
	@echo "wrote out/results.csv and out/throughput.png"

# Every figure of thesis chapters 4 and 5 in simulation -> out/figures/fig*.png + index.md
# (six sweeps; finished points are cached, so a rerun only redraws).
figures: $(STAMP)
	$(VENV)/bin/simaccept figures --out out/figures --jobs $(JOBS)

# Debian packages and C binaries for realsys (needs root; a no-op when present).
deps:
	@if [ "$$(id -u)" = 0 ] && [ -x realsys/install-deps.sh ]; then realsys/install-deps.sh; \
	 else echo "deps: not root or no installer: the realsys tests need root, and under make test their skips fail (as another user: .venv/bin/python -m pytest tests -m 'not root')"; fi

cbuild:
	@if [ -f realsys/c/Makefile ]; then $(MAKE) -s -C realsys/c all; fi

# The docs are built first: a Sphinx warning (a broken cross-reference, a docstring that
# does not parse) fails the test run, as it went unseen in incremental builds.
test: $(STAMP) deps cbuild docs
	SIMACCEPT_STRICT_SKIPS=1 $(PY) -m pytest -q tests

# -E reads every page and docstring again (an incremental build printed no warning for a
# module whose source it had already read); -W --keep-going fails on any warning, listing all.
docs: $(STAMP)
	$(PY) -m pip install -q -c constraints.txt -r docs/requirements.txt
	$(VENV)/bin/sphinx-build -q -E -W --keep-going -b html docs docs/_build/html

bench: $(STAMP)
	$(PY) -m pip install -q -c constraints.txt -e '.[bench]'
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) out docs/_build .pytest_cache
