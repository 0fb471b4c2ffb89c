"""`zapcli run` regressions found by new-user tryouts (each failed before its fix):
an interrupted `--json` run prints the run document, and `subagents_save`
leaves no draft files and names the definition, not a draft path, in errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from tests.conftest import wait_until


def call(tool, **arguments):
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def test_ctrl_c_on_run_json_prints_the_run_document(zap, model):
    model([{"match": "INT parent", "turns": [
        call("subagent", action="spawn", task="INT child"),
        {"text": "never", "delay_s": 60}]},
        {"match": "INT child", "turns": [{"text": "late", "delay_s": 60}]}])
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "run", "--json", "INT parent"],
                            env=zap.env, cwd=zap.cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        run_id = proc.stderr.readline().split()[1].rstrip(":")
        env = {**zap.env, "ZAPCLI_SESSION": run_id}

        def listed() -> list[str]:
            out = subprocess.run([sys.executable, "-m", "zapcli", "list", "--json"], env=env,
                                 capture_output=True, text=True).stdout
            return [s["id"] for s in json.loads(out)["subagents"]]

        wait_until(lambda: len(listed()) == 1, timeout=30)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    try:
        assert proc.returncode == 130, err
        doc = json.loads(out)
        (child,) = listed()
        assert doc["run_id"] == run_id and doc["status"] == "interrupted"
        assert doc["subagents"] == [child] and doc["running"] == [child]
        assert "interrupted" in doc["reason"] and doc["report"] is None
        assert zap.json("poll", "--no-wait", child, env=env)["subagents"][0]["status"] == "cancelled"
        assert {"input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens", "cost_usd",
                "calls"} <= set(doc["tokens"])
        assert doc["undelivered"][0]["id"] == child  # C26: stopped, listed as undelivered
        assert doc["error"]["code"] == "interrupted" and doc["error"]["exit_code"] == 130
        assert "Traceback" not in err
    finally:
        subprocess.run([sys.executable, "-m", "zapcli", "kill", "--all"], env=env, timeout=30)


def _tool_results(srv, match):
    last = [r for r in srv.requests if match in json.dumps(r["messages"][1])][-1]
    return [m["content"] for m in last["messages"] if m["role"] == "tool"]


def test_subagents_save_leaves_no_drafts_and_names_the_definition(zap, model):
    bad = "name: my-reviewer\ndescription: d\ntools: [read, grpe]\n"
    good = "name: my-reviewer\ndescription: d\ntools: [read, grep]\n"
    srv = model([{"match": "save drafts", "turns": [
        call("subagents_save", yaml=bad),
        call("subagents_save", yaml=good),
        call("subagents_save", fields={"name": "old-one", "description": "d", "tools": ["read"]}),
        call("subagents_save", fields={"name": "new-one", "description": "d", "tools": ["read"]},
             replaces="old-one"),
        {"text": "ok"}]}])
    proc = subprocess.run([sys.executable, "-m", "zapcli", "run", "--approval", "full",
                           "save drafts"], env=zap.env, cwd=zap.cwd, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    rejected, saved, _first, renamed = _tool_results(srv, "save drafts")
    assert "unknown tool 'grpe'" in rejected
    assert "definition-drafts" not in rejected and str(zap.home) not in rejected
    assert "my-reviewer" in rejected and "<yaml>:3:" in rejected
    assert "saved 'my-reviewer'" in saved and "removed old file" in renamed
    folder = zap.cwd / ".zapcli" / "subagents"
    assert sorted(p.name for p in folder.iterdir()) == ["my-reviewer.yml", "new-one.yml"]
    drafts = zap.home / "definition-drafts"
    assert not drafts.exists() or not [p for p in drafts.rglob("*") if p.is_file()]
