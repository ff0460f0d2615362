# coze_lab developer entry points: `make lab` and `make test`.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# jlpm (from jupyterlab) and deno live in the venv; the lab extension build needs them on PATH
export PATH := $(abspath $(VENV))/bin:$(PATH)
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
BUILD_DEPS := "hatchling>=1.21" "hatch-jupyter-builder>=0.9" "hatch-nodejs-version>=0.3.2" \
              "jupyterlab>=4.6,<5" "editables>=0.5"

.PHONY: install lab hub test lint format bench clean
#: JupyterHub's proxy (npm), installed into the venv: bin/configurable-http-proxy
CHP_VERSION ?= 5.3.0
CHP := $(VENV)/bin/configurable-http-proxy

$(VENV)/.installed: pyproject.toml labextension/package.json
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(BUILD_DEPS)
	$(PY) -m pip install --quiet --no-build-isolation -e ".[test]"
	mkdir -p $(VENV)/etc/jupyter/jupyter_server_config.d
	cp jupyter-config/server-config/coze_lab.json $(VENV)/etc/jupyter/jupyter_server_config.d/
	$(VENV)/bin/jupyter-builder develop --overwrite .
	touch $@

$(CHP): | $(VENV)/.installed
	npm install --global --prefix $(VENV) --no-audit --no-fund --loglevel=error \
	  configurable-http-proxy@$(CHP_VERSION)

install: $(VENV)/.installed $(CHP)

## make lab: JupyterLab on notebooks/ with the embedded SQLite database
## (and the offline demo model when no real model is configured)
LAB := $(VENV)/bin/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir=notebooks
lab: install
	@if [ -z "$$OPENAI_BASE_URL$$OPENAI_API_KEY$$COZE_LAB_MODELS_FILE" ]; then \
	  echo "coze_lab: no model configured; starting the offline DEMO model ([demo model] replies)"; \
	  $(PY) -m coze_lab.testing.model_server --port 8799 & demo=$$!; \
	  trap "kill $$demo" EXIT INT TERM; \
	  OPENAI_BASE_URL=http://127.0.0.1:8799/v1 COZE_LAB_DEFAULT_MODEL=coze-lab-demo $(LAB); \
	else \
	  $(LAB); \
	fi

## make hub: a local demo JupyterHub (users alice and bob, any password) with coze-lab serve
## as its service at /services/coze-lab/, the offline demo model unless one is configured,
## PostgreSQL when COZE_LAB_DATABASE_URL is set (SQLite under .cache/hub otherwise)
hub: install
	$(PY) -m coze_lab.hub.demo $(HUB_ARGS)

## make test: the whole suite (PostgreSQL too when COZE_LAB_TEST_DATABASE_URL is set)
test: install
	$(PY) -m ruff check coze_lab tests bench
	$(PY) -m pytest $(PYTEST_ARGS)

lint:
	$(PY) -m ruff check coze_lab tests bench
	$(PY) -m ruff format --check coze_lab tests bench

format:
	$(PY) -m ruff check --fix coze_lab tests bench
	$(PY) -m ruff format coze_lab tests bench

## make bench: the figures in the README (sandbox, engine vs LangGraph, API throughput)
bench: install
	$(PY) bench/sandbox.py
	$(PY) bench/engine.py

clean:
	rm -rf $(VENV) coze_lab/labextension labextension/lib labextension/node_modules
