# Two commands do all set-up on a fresh machine:
#   make run   installs everything into .venv and runs a scripted MCP session (embedded default)
#   make test  installs the dev extras and runs lint, types and the whole test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
REDIS_HOST := 127.0.0.1
REDIS_PORT := 6379
# Real Claude Code for the end-to-end tests, pinned: its prompts and hook handling change between releases.
CLAUDE_CODE_VERSION := 2.1.330
CLAUDE_DIR := .tools/claude
CLAUDE_STAMP := $(CLAUDE_DIR)/.installed-$(CLAUDE_CODE_VERSION)

.PHONY: run test install redis claude-code browser lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch's CPU build first: left to resolve it alone, pip pulls several GB of CUDA wheels.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# Then the model's ONNX export (worker.embedding.onnx_embedder) into LMS_MODELS_DIR, so that no
# first start waits for it: made once (~20 s), a second's check when it is already there.
install: $(STAMP)
	$(BIN)/python -m learning_memory.worker.embedding.export

# No package-lock: it would pin the registry host of whoever ran this; the version is pinned here.
$(CLAUDE_STAMP):
	@if ! command -v npm >/dev/null; then \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm; \
	fi
	mkdir -p $(CLAUDE_DIR)
	@# A package.json of its own, so that npm installs here and not into a parent folder.
	[ -f $(CLAUDE_DIR)/package.json ] || echo '{"private": true}' > $(CLAUDE_DIR)/package.json
	cd $(CLAUDE_DIR) && npm install --no-audit --no-fund --no-package-lock --no-save --silent \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	$(CLAUDE_DIR)/node_modules/.bin/claude --version | grep -q '^$(CLAUDE_CODE_VERSION)'
	touch $@

claude-code: $(CLAUDE_STAMP)

# Debian's chromium and its chromedriver, for the web view's browser tests (nothing downloads a browser).
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-driver; \
	fi

# Use the Redis at 127.0.0.1:6379 when it answers; else start redis-server, installing it if absent.
redis:
	@if (exec 3<>/dev/tcp/$(REDIS_HOST)/$(REDIS_PORT)) 2>/dev/null; then \
		echo "redis: using $(REDIS_HOST):$(REDIS_PORT)"; \
	else \
		if ! command -v redis-server >/dev/null; then \
			$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server; \
		fi; \
		redis-server --daemonize yes --bind $(REDIS_HOST) --port $(REDIS_PORT) --save "" --appendonly no \
			--dir /tmp --logfile /tmp/lms-redis.log; \
		for _ in $$(seq 100); do (exec 3<>/dev/tcp/$(REDIS_HOST)/$(REDIS_PORT)) 2>/dev/null && break; sleep 0.1; done; \
		(exec 3<>/dev/tcp/$(REDIS_HOST)/$(REDIS_PORT)) 2>/dev/null || { echo "redis-server did not start"; exit 1; }; \
		echo "redis: started redis-server on $(REDIS_HOST):$(REDIS_PORT)"; \
	fi

run: install redis
	$(BIN)/learning-memory demo

# ruff, then the import contracts of pyproject.toml (server -> shared <- worker).
lint: install
	$(BIN)/ruff check server worker shared tests bench learning_memory
	$(BIN)/ruff format --check server worker shared tests bench learning_memory
	$(BIN)/lint-imports

# The product strictly, and the tests and benchmarks that drive it by the same rules.
typecheck: install
	$(BIN)/mypy -p learning_memory -p tests -p bench

# pytest exits 5 when it collected nothing: that is a failure here, not a pass.
test: install redis claude-code browser lint typecheck
	@rm -f .coverage .coverage.*
	@$(BIN)/pytest --cov --cov-report=term --cov-fail-under=90; rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

bench: install redis
	$(BIN)/python -m bench all

clean:
	rm -rf $(VENV) .coverage .coverage.* .pytest_cache .mypy_cache .ruff_cache
