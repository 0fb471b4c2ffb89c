"""Traces that join (CASES-4 C47, issue 30 item 6): with OTEL_* set, each
agent CLI that exports telemetry of its own — the pinned real Claude Code,
Codex, Gemini CLI and Qwen Code — sends its spans into its subagent's trace,
under the subagent's `invoke_agent` span, checked at the real Arize Phoenix
receiver; the exporter's headers are secrets (never in clear in a trail, a
capture or a file of the CLI's home), yet reach the receiver."""

from __future__ import annotations

import pytest

from tests.backends.clitest import PROTOCOL, cli_env, configure, records, secret_leaks, spawn
from tests.conftest import Zap, trail_records, wait_until
from tests.telemetry import receivers
from tests.telemetry.conftest import GROUP
from zapcli.testing.server import ScriptedServer

pytestmark = [pytest.mark.xdist_group(GROUP), pytest.mark.timeout(600)]

HEADER_SECRET = "otel-hdr-secret-0123456789"
ZAPCLIS_OWN = ("invoke_agent ", "chat ", "execute_tool ")


@pytest.fixture
def phoenix(phoenix_server: receivers.Phoenix | None) -> receivers.Phoenix:
    """The session's Phoenix (tests/telemetry/conftest.py), shared with test_fleet:
    each CLI's spans are found by their trace id."""
    if phoenix_server is None:
        pytest.skip("Arize Phoenix is not installed: make test-tools")
    return phoenix_server


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "qwen"])
def test_an_agent_clis_own_spans_join_its_subagents_trace(zap: Zap, phoenix, cli: str) -> None:
    configure(zap, cli)
    with ScriptedServer([{"match": "say hi", "turns": [{"text": "hi there"}]}], protocol=PROTOCOL[cli]) as srv:
        env = {**cli_env(cli, srv), "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url, "OTEL_BSP_SCHEDULE_DELAY": "200",
               "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name=zapcli-cli-{cli}",
               "OTEL_EXPORTER_OTLP_HEADERS": f"x-zapcli-test={HEADER_SECRET}"}
        if cli in ("gemini", "qwen"):  # their OTLP/HTTP is JSON, which Phoenix refuses: its gRPC port
            prefix = cli.upper()
            env.update({f"{prefix}_TELEMETRY_OTLP_PROTOCOL": "grpc", f"{prefix}_TELEMETRY_OTLP_ENDPOINT": phoenix.grpc_url})
        sid = spawn(zap, cli, "say hi", env)
        res = zap("wait", sid, "--timeout", "120", timeout=150)
        assert res.returncode == 0, (res.out, zap("replay", sid).out)
    trace = trail_records(zap.trail(sid))[0]["trace"]

    def tops() -> list[dict]:
        """The CLI's own spans whose parent is not one of them: where its tree hangs."""
        theirs = [s for s in phoenix.every_span() if s["context"]["trace_id"] == trace["trace_id"]
                  and not s["name"].startswith(ZAPCLIS_OWN)]
        ids = {s["context"]["span_id"] for s in theirs}
        return [s for s in theirs if s["parent_id"] not in ids]

    # they arrive in batches: wait until every one hangs under the subagent's span
    try:
        wait_until(lambda: (got := tops()) and {s["parent_id"] for s in got} == {trace["span_id"]}, 60, 1.0)
    except AssertionError:
        pass  # said below, with what hangs elsewhere
    hanging = tops()
    # The CLI's tree hangs under the subagent's span. A span the CLI never
    # exported (codex, loaded, once lost an open parent of its
    # `persist_rollout_items` spans) leaves its children looking like tops:
    # they still carry the subagent's trace and a parent — never a root of
    # their own, which would be a trace the CLI started itself.
    under = [s for s in hanging if s["parent_id"] == trace["span_id"]]
    assert under and all(s["parent_id"] for s in hanging), \
        sorted((s["name"], s["parent_id"]) for s in hanging)
    said = [r["message"] for r in records(zap, sid, "diagnostic") if r.get("dimension") == "telemetry"]
    assert not secret_leaks(zap, sid, HEADER_SECRET), said


def test_a_continued_subagents_trace_links_to_its_first_runs(zap: Zap, model, tmp_path) -> None:
    """`zapcli continue` starts a new trace that follows the first run's: its
    `invoke_agent` span carries an OTel link to the first run's (checked in
    the protobuf the receiver got: Phoenix keeps no links) and names it."""
    model([{"match": "first task", "turns": [{"text": "first answer"}]},
           {"match": "carry on", "turns": [{"text": "second answer"}]}])
    capture = receivers.OtlpCapture()
    try:
        zap.env.update(OTEL_EXPORTER_OTLP_ENDPOINT=capture.url, OTEL_BSP_SCHEDULE_DELAY="100")
        first = zap("spawn", "--", "first task").out.strip()
        assert zap("wait", first, "--timeout", "60").returncode == 0
        res = zap("continue", first, "carry on")
        assert res.returncode == 0, res.err
        second = res.out.strip()
        assert zap("wait", second, "--timeout", "60").returncode == 0
        one, two = (trail_records(zap.trail(s))[0]["trace"] for s in (first, second))
        assert one["trace_id"] != two["trace_id"]

        def agent_span() -> object:
            return next((s for s in capture.spans if s.span_id.hex() == two["span_id"]), None)

        span = wait_until(agent_span, 30, 0.2)
        assert [(link.trace_id.hex(), link.span_id.hex()) for link in span.links] == [  # type: ignore[attr-defined]
            (one["trace_id"], one["span_id"])]
        attrs = {a.key: a.value.string_value for a in span.attributes}  # type: ignore[attr-defined]
        assert attrs["zapcli.continue_of"] == first
        assert {a.key: a.value.string_value for a in span.links[0].attributes} == {  # type: ignore[attr-defined]
            "zapcli.relation": "continue_of"}
    finally:
        capture.close()


def test_what_each_cli_is_told_keeps_the_persons_own_settings(tmp_path) -> None:
    """The launch side, for every CLI at once: a variable the person set wins;
    the exporter's headers stay in the environment, never in a settings file
    the launch writes; a person's own NODE_OPTIONS are kept beside the
    preload; a CLI that cannot nest is tied to its subagent by resource."""
    from zapcli.backends.clis.base import CliRequest
    from zapcli.backends.registry import get

    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    env = {"PATH": "/bin", "TRACEPARENT": tp, "ZAPCLI_SUBAGENT_ID": "sa_20260101_0123abcd",
           "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
           "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{HEADER_SECRET}",
           "NODE_OPTIONS": "--max-old-space-size=4096", "OTEL_RESOURCE_ATTRIBUTES": "team=blue",
           "OPENAI_API_KEY": "sk-test-0123456789", "GEMINI_API_KEY": "g-test-0123456789",
           "ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}
    told = {}
    for name in ("claude", "codex", "gemini", "qwen", "opencode", "pi"):
        home = tmp_path / name
        home.mkdir()
        req = CliRequest(task="t", cwd=str(tmp_path), workspace=str(tmp_path), config_home=home, env=env, model="m")
        backend = get(name)
        launch = backend.launch(req, [name])
        said = backend.join_trace(req, launch)
        assert not [rel for rel, text in launch.files.items() if HEADER_SECRET in text], name
        told[name] = (launch, said)
    claude = told["claude"][0].env
    assert claude["OTEL_EXPORTER_OTLP_PROTOCOL"] == "grpc" and claude["CLAUDE_CODE_ENHANCED_TELEMETRY_BETA"] == "1"
    assert claude["TRACEPARENT"] == tp
    config = told["codex"][0].files["config.toml"]
    assert 'trace_exporter = { otlp-grpc = { endpoint = "http://collector:4317" } }' in config, config
    for name in ("gemini", "qwen"):
        node = told[name][0].env
        assert node["NODE_OPTIONS"].startswith("--max-old-space-size=4096 --require ") and "otel_parent.cjs" in node["NODE_OPTIONS"]
        assert node[f"{name.upper()}_TELEMETRY_OTLP_PROTOCOL"] == "grpc"
        assert node[f"{name.upper()}_TELEMETRY_LOG_PROMPTS"] == "false"
    assert told["opencode"][0].env["OTEL_RESOURCE_ATTRIBUTES"] == (
        "team=blue,zapcli.subagent.id=sa_20260101_0123abcd,zapcli.trace_id=4bf92f3577b34da6a3ce929d0e0e4736")
    assert "exports no telemetry of its own" in told["pi"][1][0]
