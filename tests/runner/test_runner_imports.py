"""What a runner imports (#32: the cost of a subagent): an unsandboxed shell
subagent's runner never loads the sandbox's machinery, definitions, YAML, the
CLI framework or a model SDK. Counts modules through Python's own import
report (PYTHONPROFILEIMPORTTIME, written to the runner's stderr, which is the
subagent's `.err` file), never time or memory: each module named here cost
a runner milliseconds and megabytes (tests/bench/bench_fanout.py)."""

from __future__ import annotations

import re

from tests.sandbox.conftest import needs_bwrap

NEVER_FOR_SH = {"yaml", "typer", "click", "rich", "openai", "mcp", "jsonschema", "httpx",
                "zapcli.definitions", "zapcli.host", "zapcli.sandbox", "zapcli.agent",
                "zapcli.providers", "zapcli.cli.app", "zapcli.backends.sandboxed",
                # what it needs only when something is left to end, or a tree to make
                "psutil", "zapcli.worktrees", "zapcli.runner.guard",
                # hashlib brings OpenSSL (~4 MB); shutil its compressors; tempfile random
                "hashlib", "_hashlib", "shutil", "tempfile",
                # orjson brings dataclasses, inspect, uuid, datetime (~8 ms): a shell runner
                # writes a few records; traceback only with one to print; socket only for
                # a `zapcli run`'s subagent; typing for annotations only
                "orjson", "dataclasses", "inspect", "traceback", "socket", "typing",
                # its shell starts with posix_spawn: subprocess brought locale, selectors,
                # math (~1 MB of a runner's 13)
                "subprocess", "locale", "selectors",
                # the dump flag goes off through _ctypes alone (ctypes' package: ~250 KB)
                "ctypes",
                # a `started` hook's machinery, for a subagent without one
                "zapcli.trail.events",
                # what earlier runners learnt of model prices: a built-in agent's
                "zapcli.remembered_prices",
                # `run --subagent --id ID` goes straight to the runner: the table of every
                # command's options is for the other command lines
                "zapcli.cli.argspec", "zapcli.cli.fastpath",
                # `signal` builds its enums at import: `_signal` (its core) does what a runner
                # asks; a subagent's status is no Enum either
                "signal", "enum"}


def _imported(err: str) -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|(.*)$", err, re.M)}


def _brought_in(err: str, loaded: list[str]) -> str:
    """The import report from the first unwanted module up to the top-level
    import that brought it in (Python prints a module's imports before it)."""
    lines = [ln for ln in err.splitlines() if ln.startswith("import time:")]
    named = [i for i, ln in enumerate(lines) if ln.rsplit("|", 1)[-1].strip() in loaded]
    if not named:
        return ""
    end = next((i for i in range(named[0], len(lines))
                if not lines[i].rsplit("|", 1)[-1].startswith("  ")), len(lines) - 1)
    return "\n".join(lines[named[0]:end + 1])


def test_an_unsandboxed_sh_runner_imports_no_sandbox_definitions_or_sdk(zap):
    proc = zap("spawn", "--cli", "sh", "--", "echo done", env={"PYTHONPROFILEIMPORTTIME": "1"})
    sid = proc.out.strip()
    assert sid.startswith("sa_"), proc.err
    assert zap.wait_status(sid) == "completed"
    err = (zap.home / "subagents" / f"{sid}.err").read_text(errors="replace")
    modules = _imported(err)
    assert "zapcli.runner.main" in modules, err[-2000:]  # the report is the runner's
    loaded = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER_FOR_SH))
    # Python's report lists a module's imports before it, deepest first: the
    # lines up to the first unwanted one say which import brought it in.
    assert not loaded, f"an unsandboxed sh runner imported {loaded}:\n" + _brought_in(err, loaded)
    assert (zap.home / "subagents" / f"{sid}.out").read_text() == "done\n"


NEVER_FOR_SANDBOXED_SH = {"yaml", "typer", "click", "rich", "openai", "mcp", "jsonschema", "httpx",
                          "zapcli.agent", "zapcli.providers", "zapcli.cli.app",
                          "zapcli.definitions.layers", "zapcli.definitions.yamlload",
                          # the sandbox's data classes are the house's (`zapcli.plain`):
                          # dataclasses brought inspect, ast, dis, tokenize (~8 ms of CPU)
                          "dataclasses", "inspect",
                          # nothing of an `echo` outlives it: no sweep (bubblewrap's own
                          # process on its way out as the sandbox closes is none to sweep)
                          "psutil", "zapcli.supervisor.kill"}


@needs_bwrap
def test_a_sandboxed_sh_runner_beside_a_yarnrc_placeholder_loads_no_yaml(zap):
    """The subagents a model spawns run sandboxed, many at once in one folder:
    each holds a `.yarnrc.yml` placeholder (`{}`) while it runs, and each
    sibling's runner reads it for the `yarnPath` it names. An empty mapping
    names none: no YAML parser for it (~25 ms of CPU a runner, PyYAML's
    regular expressions). Nor `dataclasses` for the sandbox's policy."""
    (zap.cwd / ".yarnrc.yml").write_text("{}\n")  # as a running sibling's placeholder is
    # the first runner of a state folder lists the control files (every backend imported,
    # then kept: `zapcli.backends.registry.control_files`); the report is of the next one's
    first = zap("spawn", "--cli", "sh", "--sandbox", "--", "true").out.strip()
    assert zap.wait_status(first) == "completed"
    proc = zap("spawn", "--cli", "sh", "--sandbox", "--", "echo done",
               env={"PYTHONPROFILEIMPORTTIME": "1"})
    sid = proc.out.strip()
    assert sid.startswith("sa_"), proc.err
    assert zap.wait_status(sid) == "completed"
    err = (zap.home / "subagents" / f"{sid}.err").read_text(errors="replace")
    modules = _imported(err)
    assert "zapcli.host.sandbox" in modules, err[-2000:]  # the report is a sandboxed runner's
    loaded = sorted(m for m in modules
                    if any(m == n or m.startswith(n + ".") for n in NEVER_FOR_SANDBOXED_SH))
    assert not loaded, f"a sandboxed sh runner imported {loaded}:\n" + _brought_in(err, loaded)
    assert (zap.home / "subagents" / f"{sid}.out").read_text() == "done\n"
