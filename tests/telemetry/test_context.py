"""TRACEPARENT reaches every subagent's work (docs/explanation/rules.md#fleets-traces-teams, issue 21 item 2): an
`sh` command, the built-in agent's `bash`, the agent CLIs; a subagent spawned
from inside another is its child span. Real runners, real processes; the
span ids checked are the ones `zapcli trace export` sends (tracecontext)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.backends.test_cli_standins import standin, use
from tests.conftest import trail_records
from zapcli import tracecontext

TP = re.compile(r"TP=(00-[0-9a-f]{32}-[0-9a-f]{16}-0[01])")


def _trace(zap, sid: str) -> dict:
    return trail_records(zap.trail(sid))[0]["trace"]


def _tp(text: str) -> tuple[str, str, bool]:
    found = TP.search(text)
    assert found, text
    parsed = tracecontext.parse(found.group(1))
    assert parsed is not None
    return parsed


def test_parse_and_format_follow_w3c():
    ok = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert tracecontext.parse(ok) == ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", True)
    assert tracecontext.format_parent(*tracecontext.parse(ok)) == ok  # type: ignore[misc]
    assert tracecontext.parse(ok[:-1] + "0")[2] is False
    for bad in ("", "00-" + "0" * 32 + "-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-"
                + "0" * 16 + "-01", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", "garbage"):
        assert tracecontext.parse(bad) is None, bad
    # a later version is read as 00, its extra fields ignored
    assert tracecontext.parse("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x")
    a = tracecontext.child_id("b7ad6b7169203331", "tool/call_1")
    assert a == tracecontext.child_id("b7ad6b7169203331", "tool/call_1") != tracecontext.child_id(
        "b7ad6b7169203331", "tool/call_2")


def test_sh_work_and_a_subagent_spawned_from_it_join_the_callers_trace(zap):
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    env = {"TRACEPARENT": caller, "TRACESTATE": "vendor=abc"}
    proc = zap("spawn", "--cli", "sh", "--", "echo TP=$TRACEPARENT; echo TS=$TRACESTATE; "
               "zapcli spawn --cli sh -- 'echo TP=$TRACEPARENT'", env=env)
    outer = proc.out.strip()
    assert zap("wait", outer, "--timeout", "30").returncode == 0
    trace = _trace(zap, outer)
    assert trace["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace["parent_span_id"] == "00f067aa0ba902b7" and trace["tracestate"] == "vendor=abc"
    out = zap("output", outer).out
    trace_id, span, sampled = _tp(out)
    # the command runs as the `execute_tool sh` child of the subagent's own span
    assert (trace_id, span, sampled) == (trace["trace_id"], tracecontext.child_id(trace["span_id"], "sh"), True)
    assert "TS=vendor=abc" in out
    inner = re.search(r"sa_\d{8}_[0-9a-f]{8}", out.split("TS=")[1]).group(0)  # type: ignore[union-attr]
    assert zap("wait", inner, "--timeout", "30").returncode == 0
    child = _trace(zap, inner)
    assert child["trace_id"] == trace["trace_id"] and child["parent_span_id"] == span
    assert child["parent_id"] == outer  # the tree: spawned from inside `outer`
    assert _tp(zap("output", inner).out)[1] == tracecontext.child_id(child["span_id"], "sh")


def test_a_spawn_outside_any_trace_starts_its_own(zap):
    a, b = zap.spawn_sh("true"), zap.spawn_sh("true")
    ta, tb = _trace(zap, a), _trace(zap, b)
    assert ta["trace_id"] != tb["trace_id"] and ta["parent_span_id"] is None
    assert "parent_id" not in ta


def test_the_agents_bash_runs_under_its_execute_tool_span(zap, model):
    model([{"match": "show context", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo TP=$TRACEPARENT"}}]},
        {"text": "done"}]}])
    sid = zap("spawn", "--approval", "full", "--", "show context").out.strip()
    assert zap("wait", sid, "--timeout", "60").returncode == 0, zap("replay", sid).out
    recs = trail_records(zap.trail(sid))
    call = next(r for r in recs if r["type"] == "tool_call")
    result = next(r for r in recs if r["type"] == "tool_result")
    trace = recs[0]["trace"]
    trace_id, span, _ = _tp(result["content"])
    assert trace_id == trace["trace_id"]
    assert span == tracecontext.child_id(trace["span_id"], tracecontext.tool_key(call["call_id"]))
    usage = next(r for r in recs if r["type"] == "usage")
    assert isinstance(usage["duration_ms"], int)  # the model call's own span has its length


STANDIN = r'''
import json, os, sys
if "--version" in sys.argv:
    sys.exit(print("0.0.1 (stand-in)"))
with open(os.path.join(os.environ["ZAP_T"], "launch-env"), "w") as f:
    json.dump(dict(os.environ), f)
sys.stdin.read()
'''


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "opencode"])
def test_each_agent_cli_is_started_inside_its_subagents_span(zap, tmp_path, cli):
    """Each adapter builds its CLI's environment its own way (private homes,
    dropped variables): the trace context must survive every one of them."""
    use(zap, {cli: {"command": str(standin(tmp_path, f"fake-{cli}", STANDIN))}})
    # the stand-in runs in zapcli's sandbox, as a real CLI does (the trace context must
    # survive the sandbox's environment too): it may write only in the workspace
    sid = zap("spawn", "--cli", cli, "--model", "m", "--", "hello",
              env={"ZAP_T": str(zap.cwd), "TRACESTATE": "k=v",
                   "TRACEPARENT": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}).out.strip()
    zap("wait", sid, "--timeout", "60")
    env = json.loads((zap.cwd / "launch-env").read_text())
    trace = _trace(zap, sid)
    assert env["TRACEPARENT"] == tracecontext.format_parent(trace["trace_id"], trace["span_id"])
    assert env["TRACESTATE"] == "k=v" and trace["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"


def _imported(zap, sid: str) -> set[str]:
    err = (zap.home / "subagents" / f"{sid}.err").read_text(errors="replace")
    return {line.split("|")[-1].strip() for line in err.splitlines() if line.startswith("import time:")}


def test_the_runner_imports_no_telemetry_without_an_endpoint(zap, tmp_path):
    """Without OTEL_* nothing of the extra is imported (the import log of the
    runner itself, which lands in its captured stderr); with it, it is."""
    proc = zap("spawn", "--cli", "sh", "--", "true", env={"PYTHONPROFILEIMPORTTIME": "1"})
    plain = proc.out.strip()
    zap("wait", plain, "--timeout", "30")
    names = _imported(zap, plain)
    assert "zapcli.runner.main" in names  # the log is the runner's
    assert not {n for n in names if n.startswith(("opentelemetry", "zapcli.telemetry"))}
    proc = zap("spawn", "--cli", "sh", "--", "true", env={
        "PYTHONPROFILEIMPORTTIME": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1"})
    traced = proc.out.strip()
    assert zap("wait", traced, "--timeout", "30").returncode == 0  # a dead collector changes nothing
    assert "zapcli.telemetry.live" in _imported(zap, traced)


NETLESS = "name: netless\ndescription: offline but for its model\ncli: {cli}\nsandbox:\n  network: false\n"


@pytest.mark.parametrize("cli", ["claude", "gemini"])
def test_a_cli_whose_network_is_off_is_not_told_to_export_its_spans(zap, tmp_path, cli):
    """With the definition's `network: false` the sandbox lets the CLI reach
    only its model: its own exporter would reach no collector (and could
    stall retrying), so it is not turned on, and the trail says why. The
    trace context still reaches it."""
    use(zap, {cli: {"command": str(standin(tmp_path, f"fake-{cli}", STANDIN))}})
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "netless.yaml").write_text(NETLESS.format(cli=cli))
    sid = zap("spawn", "--agent", "netless", "--model", "m", "--", "hello", env={
        "ZAP_T": str(zap.cwd), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9999", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9999",
        "TRACEPARENT": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}).out.strip()
    zap("wait", sid, "--timeout", "60")
    env = json.loads((zap.cwd / "launch-env").read_text())
    assert env["TRACEPARENT"].split("-")[1] == "4bf92f3577b34da6a3ce929d0e0e4736"
    told = {k for k in env if k.startswith(("CLAUDE_CODE_ENABLE_TELEMETRY", "GEMINI_TELEMETRY"))}
    assert not told and "otel_parent" not in env.get("NODE_OPTIONS", ""), told
    said = [r["message"] for r in trail_records(zap.trail(sid))
            if r.get("type") == "diagnostic" and r.get("dimension") == "telemetry"]
    assert any("network off" in s and "only zapcli's spans" in s for s in said), said
