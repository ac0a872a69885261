# The README's two commands: `make lab` (set up, build the practice edition, open
# JupyterLab) and `make test` (set up, run every test). Needs only python3 and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# nbgrader runs `alembic` from PATH, so every tool runs with the venv's bin/ first.
RUN    := PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python
# What each command installs, once (a stamp file per set): a student's Lab only the workbook and what it
# depends on (JupyterLab, nbgrader, ipywidgets, ipympl, numpy, matplotlib); the demo adds Voila, the
# hub JupyterHub's client side; make test, check and bench everything (the tests, the hub, Dask, the demo).
STAMP_LAB  := $(VENV)/.installed-lab
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_HUB  := $(VENV)/.installed-hub
STAMP      := $(VENV)/.installed

.PHONY: lab test check bench practice release clean demo hub hub-stop image image-test

# Jupyter refuses to run as root unless told to (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

# The students' JupyterLab: configured by lab/ (their nbgrader tools, not the instructor's; opens
# on workbook/START.md; no news pop-up); their own settings and workspaces stay in workbook/.jupyter/.
# On a student's own machine there is no exchange: lab/local/ hides nbgrader's Assignment List and its
# menu (they said "Error fetching courses!"); Validate stays. A hosted class's Lab does not read lab/local/.
LAB_ENV := JUPYTER_CONFIG_DIR="$(CURDIR)/lab" JUPYTER_CONFIG_PATH="$(CURDIR)/lab/local" \
	JUPYTERLAB_SETTINGS_DIR="$(CURDIR)/workbook/.jupyter/settings" \
	JUPYTERLAB_WORKSPACES_DIR="$(CURDIR)/workbook/.jupyter/workspaces"

lab: practice
	$(LAB_ENV) $(RUN) -m jupyter lab --notebook-dir=workbook $(ROOT_FLAG)

# The tests run on two pytest-xdist workers (WORKERS=0: one process). The tests that share a fixture
# which grades, executes or serves run on the same worker, and the browser's and the hub's tests
# on one worker of their own (tests/conftest.py, SHARED): they mostly wait on servers and Chromium,
# while the other worker's grading and executions keep the second core busy.
WORKERS ?= 2
XDIST   := $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadgroup)
CHECK_XDIST := -n auto --dist loadgroup

# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set (see check): every kernel, grader and
# server the tests start imports mha_core and autograders, compiled once instead of in each.
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(RUN) -m pytest $(XDIST)

# The fast tier, for development: everything that does not grade, execute notebooks, start
# kernels, sandboxes, servers or a browser (tests using such a fixture are marked slow; one that
# starts a kernel anyway fails). Says its wall time, start-up included, and the machine's load.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: pytest keeps its rewritten test
# modules (and Python the project's modules) in __pycache__, which halves each worker's collection.
check: $(STAMP)
	@start=$$(date +%s); PYTHONDONTWRITEBYTECODE= $(RUN) -m pytest -m "not slow" -q $(CHECK_XDIST); status=$$?; \
	echo "make check: $$(( $$(date +%s) - start )) s of wall time (load average $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"; \
	exit $$status

bench: $(STAMP)
	$(RUN) -m benchmarks $(BENCH)

# The classroom demo as a code-free dashboard (Voila) on http://localhost:8866: one screen per idea,
# sized for a 1280x720 projector.
demo: $(STAMP_DEMO)
	cd demo && PATH="$(CURDIR)/$(BIN):$$PATH" PYTHONPATH="$(CURDIR)" $(CURDIR)/$(BIN)/python -m voila classroom.ipynb \
		--theme=light --show_tracebacks=False

# A class on this server (see the README's "Hosting a course"): JupyterHub on port $(PORT), every
# student of $(ROSTER) (nbgrader's columns: id,first_name,last_name,email) an account of their own,
# the instructor $(INSTRUCTOR) with the course and the Formgrader, the ngshare exchange, the culler.
# Needs root (or sudo); refuses before changing anything when it cannot work. HUB_ARGS: more
# options of `mha-workbook hub up` (--signup open, --due due.csv, --cull-timeout 1800, ...).
# ROOT (the hub's state) and PREFIX (its environments) place a second hub beside the first;
# `make hub-stop ROOT=...` stops that one.
ROSTER     ?= roster.csv
INSTRUCTOR ?= instructor
PORT       ?= 8000
HUB_ARGS   ?=
ROOT       ?= /srv/mha-workbook
PREFIX     ?= /opt/mha-workbook
HUB_PLACE   = --root "$(ROOT)" --prefix "$(PREFIX)"
SUDO       := $(if $(filter 0,$(shell id -u)),,sudo)

hub:
	@if [ "$$(id -u)" != 0 ] && ! command -v sudo > /dev/null; then \
		echo "make hub: needs root (it creates an account per student): run it as root, or install sudo"; exit 2; fi
	@[ -r "$(ROSTER)" ] || { echo "make hub: roster $(ROSTER) cannot be read (make hub ROSTER=path/to/roster.csv)"; exit 2; }
	$(MAKE) $(STAMP_HUB)
	$(SUDO) $(RUN) -m autograders hub up $(HUB_PLACE) --roster "$(ROSTER)" --instructor "$(INSTRUCTOR)" --port $(PORT) $(HUB_ARGS)

hub-stop: $(STAMP_HUB)
	$(SUDO) $(RUN) -m autograders hub stop $(HUB_PLACE)

# The single-user image of deploy/Dockerfile, built with podman (deploy/README.md). Without a
# registry: a stand-in for its base (python:3.11-slim-bookworm) is made from Debian's packages
# when podman has none (deploy/stand-in-base.sh; BASE=new makes it again). As root; needs mmdebstrap,
# podman, buildah, runc. `make image-test` runs tests/test_image.py on it: not part of `make
# test` (which deselects the marker `image`) nor of CI.
IMAGE  := mha-workbook-singleuser:0.1.0
PODMAN := podman --runtime runc --cgroup-manager=cgroupfs
BASE   ?= keep

image:
	@command -v podman > /dev/null && command -v mmdebstrap > /dev/null || { \
		echo "make image: needs podman and mmdebstrap (apt-get install podman buildah runc uidmap mmdebstrap)"; exit 2; }
	@start=$$(date +%s); \
	if [ "$(BASE)" = new ] || ! podman image exists docker.io/library/python:3.11-slim-bookworm; then \
		sh deploy/stand-in-base.sh || exit 1; fi; \
	$(PODMAN) build --pull=never --network=host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
		--ignorefile deploy/Dockerfile.dockerignore -f deploy/Dockerfile -t $(IMAGE) . || exit 1; \
	echo "make image: $(IMAGE) in $$(( $$(date +%s) - start )) s, $$(podman image inspect --format '{{.Size}}' $(IMAGE) | awk '{printf "%.0f MB", $$1 / 1e6}')"

image-test: image
	PYTHONDONTWRITEBYTECODE= $(RUN) -m pytest -m image tests/test_image.py

practice: $(STAMP_LAB)
	$(RUN) -m autograders practice --out workbook

release: $(STAMP_LAB)
	$(RUN) -m autograders release --course course

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(STAMP_LAB): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e .
	touch $@

$(STAMP_DEMO): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[demo]'
	touch $@ $(STAMP_LAB)

$(STAMP_HUB): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[hub]'
	touch $@ $(STAMP_LAB)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[test,dask,demo,hub]'
	touch $@ $(STAMP_LAB) $(STAMP_DEMO) $(STAMP_HUB)

clean:
	rm -rf $(VENV) build course
