# coze_lab developer entry points: `make lab` and `make test`.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# jlpm (from jupyterlab) and deno live in the venv; the lab extension build needs them on PATH
export PATH := $(abspath $(VENV))/bin:$(PATH)
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
BUILD_DEPS := "hatchling>=1.21" "hatch-jupyter-builder>=0.9" "hatch-nodejs-version>=0.3.2" \
              "jupyterlab>=4.6,<5" "editables>=0.5"

.PHONY: install lab hub test lint format bench clean dist docs screenshots
#: JupyterHub's proxy (npm), installed into the venv: bin/configurable-http-proxy
CHP_VERSION ?= 5.3.0
CHP := $(VENV)/bin/configurable-http-proxy

$(VENV)/.installed: pyproject.toml labextension/package.json
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(BUILD_DEPS)
	$(PY) -m pip install --quiet --no-build-isolation -e ".[test,docs]"
	mkdir -p $(VENV)/etc/jupyter/jupyter_server_config.d
	cp jupyter-config/server-config/coze_lab.json $(VENV)/etc/jupyter/jupyter_server_config.d/
	$(VENV)/bin/jupyter-builder develop --overwrite .
	touch $@

## the official Coze JavaScript SDK (@coze/api) for the tests that drive it with node; its
## optional `speaker` dependency does not build here, and the SDK never needs it
COZE_JS := .cache/coze-js
$(COZE_JS)/.installed: tests/web/coze_js/package.json tests/web/coze_js/package-lock.json
	mkdir -p $(COZE_JS)
	cp tests/web/coze_js/package.json tests/web/coze_js/package-lock.json $(COZE_JS)/
	cd $(COZE_JS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

$(CHP): | $(VENV)/.installed
	npm install --global --prefix $(VENV) --no-audit --no-fund --loglevel=error \
	  configurable-http-proxy@$(CHP_VERSION)

install: $(VENV)/.installed $(COZE_JS)/.installed $(CHP)

## make lab: JupyterLab on notebooks/ with the embedded SQLite database
## (and the offline demo model when no real model is configured).
## make lab PORT=9999 HOST=0.0.0.0 picks where JupyterLab listens; MODEL_PORT=... the demo
## model's port (default: a free one); LAB_ARGS=... more jupyter lab options.
PORT ?= 8888
HOST ?= 127.0.0.1
MODEL_PORT ?=
LAB_ARGS ?=
LAB := $(VENV)/bin/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir=notebooks \
       --ServerApp.ip=$(HOST) --ServerApp.port=$(PORT) --ServerApp.port_retries=0 $(LAB_ARGS)
LAB_URL := http://$(if $(filter 0.0.0.0,$(HOST)),127.0.0.1,$(HOST)):$(PORT)/lab
NEW_TOKEN := $(PY) -c 'import secrets; print(secrets.token_hex(16))'
FREE_PORT := $(PY) -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
lab: install
	@token=$$($(NEW_TOKEN)); \
	if [ -z "$$OPENAI_BASE_URL$$OPENAI_API_KEY$$COZE_LAB_MODELS_FILE" ]; then \
	  model_port=$(if $(MODEL_PORT),$(MODEL_PORT),$$($(FREE_PORT))); \
	  echo "coze_lab: no model configured; starting the offline DEMO model on port $$model_port ([demo model] replies)"; \
	  $(PY) -m coze_lab.testing.model_server --port $$model_port & demo=$$!; \
	  trap "kill $$demo 2>/dev/null" EXIT INT TERM; \
	  $(PY) scripts/lab_banner.py "$(LAB_URL)?token=$$token" --demo-model & \
	  OPENAI_BASE_URL=http://127.0.0.1:$$model_port/v1 COZE_LAB_DEFAULT_MODEL=coze-lab-demo \
	    $(LAB) --IdentityProvider.token=$$token; \
	else \
	  $(PY) scripts/lab_banner.py "$(LAB_URL)?token=$$token" & \
	  $(LAB) --IdentityProvider.token=$$token; \
	fi

## make hub: a local demo JupyterHub (users alice and bob, any password) with coze-lab serve
## as its service at /services/coze-lab/, the offline demo model unless one is configured,
## PostgreSQL when COZE_LAB_DATABASE_URL is set (SQLite under .cache/hub otherwise)
hub: install
	$(PY) -m coze_lab.hub.demo $(HUB_ARGS)

## make test: the whole suite (PostgreSQL too when COZE_LAB_TEST_DATABASE_URL is set)
test: install
	$(PY) -m ruff check coze_lab tests bench scripts
	$(PY) -m pytest $(PYTEST_ARGS)

## make dist: wheel + sdist in dist/ (the wheel carries the built lab extension), checked by twine
dist: install
	rm -rf dist
	$(PY) -m build --no-isolation --sdist --wheel --outdir dist .
	$(PY) -m twine check --strict dist/*

## make screenshots: the pictures of the README and the docs (docs/images/coze-lab.png,
## timeline.png), taken
## from a real JupyterLab in headless Chromium (/usr/bin/chromium) by a browser test
screenshots: install
	COZE_LAB_SCREENSHOTS_DIR=$(abspath docs/images) $(PY) -m pytest -q -p no:cacheprovider \
	  tests/web/test_studio_browser.py -k "test_the_chat_widget_answers_a_tool_question_inline or test_a_csv_chat_reattaches"

## make docs: the documentation site in site/ (the test suite builds it with --strict too)
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

lint:
	$(PY) -m ruff check coze_lab tests bench scripts
	$(PY) -m ruff format --check coze_lab tests bench scripts

format:
	$(PY) -m ruff check --fix coze_lab tests bench scripts
	$(PY) -m ruff format coze_lab tests bench scripts

## make bench: the figures of docs/benchmarks.md (sandbox, engine vs LangGraph, API throughput, chat, start-up)
bench: install
	$(PY) bench/sandbox.py
	$(PY) bench/engine.py
	$(PY) bench/chat.py
	$(PY) bench/startup.py

clean:
	rm -rf $(VENV) $(COZE_JS) coze_lab/labextension labextension/lib labextension/node_modules dist site
