# The README's two commands: `make lab` (set up, build the practice edition, open
# JupyterLab) and `make test` (set up, run every test). Needs only python3 and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# nbgrader runs `alembic` from PATH, so every tool runs with the venv's bin/ first.
RUN    := PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python
STAMP  := $(VENV)/.installed

.PHONY: lab test check bench practice release clean demo

# Jupyter refuses to run as root unless told to (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

# The students' JupyterLab: configured by lab/ (their nbgrader tools, not the instructor's; opens
# on workbook/START.md; no news pop-up); their own settings and workspaces stay in workbook/.jupyter/.
LAB_ENV := JUPYTER_CONFIG_DIR="$(CURDIR)/lab" JUPYTERLAB_SETTINGS_DIR="$(CURDIR)/workbook/.jupyter/settings" \
	JUPYTERLAB_WORKSPACES_DIR="$(CURDIR)/workbook/.jupyter/workspaces"

lab: practice
	$(LAB_ENV) $(RUN) -m jupyter lab --notebook-dir=workbook $(ROOT_FLAG)

test: $(STAMP)
	$(RUN) -m pytest

# The fast tier, for development: everything that does not grade, execute notebooks, start
# kernels, sandboxes, servers or a browser (tests using such a fixture are marked slow; one that
# starts a kernel anyway fails). Says its wall time, start-up included, and the machine's load.
check: $(STAMP)
	@start=$$(date +%s); $(RUN) -m pytest -m "not slow" -q; status=$$?; \
	echo "make check: $$(( $$(date +%s) - start )) s of wall time (load average $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"; \
	exit $$status

bench: $(STAMP)
	$(RUN) -m benchmarks $(BENCH)

# The classroom demo as a code-free dashboard (Voila) on http://localhost:8866: one screen per idea,
# sized for a 1280x720 projector.
demo: $(STAMP)
	cd demo && PATH="$(CURDIR)/$(BIN):$$PATH" PYTHONPATH="$(CURDIR)" $(CURDIR)/$(BIN)/python -m voila classroom.ipynb \
		--theme=light --show_tracebacks=False

practice: $(STAMP)
	$(RUN) -m autograders practice --out workbook

release: $(STAMP)
	$(RUN) -m autograders release --course course

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[test,dask,demo]'
	touch $@

clean:
	rm -rf $(VENV) build course
