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
from zapcli.testing.server import ScriptedServer

pytestmark = [pytest.mark.xdist_group("telemetry-clis"), pytest.mark.timeout(600)]

HEADER_SECRET = "otel-hdr-secret-0123456789"
ZAPCLIS_OWN = ("invoke_agent ", "chat ", "execute_tool ")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory):
    if not receivers.PHOENIX.exists():
        pytest.skip("Arize Phoenix is not installed: make test-tools")
    p = receivers.Phoenix(tmp_path_factory.mktemp("phoenix-clis")).ready()
    try:
        yield p
    finally:
        p.stop()


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
    assert hanging and {s["parent_id"] for s in hanging} == {trace["span_id"]}, \
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
