"""Bad input to the telemetry commands: a clear message, the right exit code,
nothing written (docs/explanation/rules.md#commands; issue 21)."""

from __future__ import annotations

import json

from tests.telemetry.receivers import free_port


def test_trace_export_says_what_is_missing(zap):
    sid = zap.spawn_sh("true")
    zap("wait", sid)
    no_endpoint = zap("trace", "export", sid)
    assert no_endpoint.returncode == 2 and "OTEL_EXPORTER_OTLP_ENDPOINT" in no_endpoint.err
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}", "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    down = zap("trace", "export", sid, env=env)
    assert down.returncode == 1 and "did not take the spans" in down.err, down.err
    assert "Traceback" not in down.err and down.err.count("\n") <= 2  # one message, not the SDK's retries
    both = zap("trace", "export", sid, "--session", "x", env=env)
    assert both.returncode == 2 and "one subagent" in both.err
    unknown = zap("trace", "export", "sa_20260101_00000000", env=env)
    assert unknown.returncode == 1 and "does not exist" in unknown.err
    doc = zap.json("trace", "export", "--session", "no-such-session", env=env)
    assert doc["error"]["exit_code"] == 2 and "has no subagents" in doc["error"]["message"]


def test_export_and_timeline_refuse_bad_requests_and_write_nothing(zap, tmp_path):
    sid = zap.spawn_sh("echo hi")
    zap("wait", sid)
    bad = zap("export", sid, "--format", "xml")
    assert bad.returncode == 2 and "choose: atif" in bad.err
    nothing = zap("timeline", sid)
    assert nothing.returncode == 2 and "--html FILE" in nothing.err
    out = tmp_path / "out"
    out.mkdir()
    folder = zap("timeline", sid, "--html", str(out))
    assert folder.returncode == 2 and "is a folder" in folder.err
    assert zap("timeline", "sa_20260101_00000000", "--html", str(out / "x.html")).returncode == 1
    assert list(out.iterdir()) == []
    # the ATIF document on stdout, whole, with or without --json
    doc = json.loads(zap("export", sid).out)
    assert doc["schema_version"] == "ATIF-v1.7" and doc["steps"][-1]["observation"]["results"][0]["content"] == "hi\n"
    perfetto = json.loads(zap("timeline", sid[-8:], "--format", "perfetto").out)
    assert perfetto["traceEvents"][0]["ph"] == "M"


def test_gc_removes_a_run_trail_with_the_last_of_its_subagents(zap):
    from zapcli.trail import records, runs, store

    def ended_run(run_id: str) -> None:
        path = runs.create(run_id, {"session": run_id, "cli": "zapcli", "task": "t"}, [])
        store.append(path, "status", {"status": "completed", "exit_code": 0, "reason": None})

    ended_run("run_20260101_000000aa")  # nothing of its session is left
    ended_run("run_20260101_000000bb")  # one of its subagents is still kept
    sid = zap("spawn", "--cli", "sh", "--", "true", env={"ZAPCLI_SESSION": "run_20260101_000000bb"}).out.strip()
    zap("wait", sid)
    live = runs.create("run_20260101_000000cc", {"session": "x", "cli": "zapcli", "task": "t"}, [])
    assert records.SCHEMA_VERSION == 1 and live.exists()
    assert zap.json("gc")["skipped_reason"] is None  # (the runner's own pass at its end may come first)
    assert runs.ids_on_disk() == ["run_20260101_000000bb", "run_20260101_000000cc"]  # a run still going stays
