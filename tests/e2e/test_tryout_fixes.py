"""Regressions found by trying the product as a new user (each failed before its fix)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import wait_until


def test_json_errors_are_json_documents_on_stdout(zap):
    proc = zap("spawn", "--cli", "bogus", "--json", "--", "x")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["error"]["code"] == "usage" and "bogus" in doc["error"]["message"]
    assert "bogus" in proc.err


def test_flags_of_the_agent_are_refused_for_sh(zap):
    for flags in (["--unattended"], ["--approval", "full"]):
        proc = zap("spawn", "--cli", "sh", *flags, "--", "true")
        assert proc.returncode == 2 and "not a shell command; drop them for --cli sh" in proc.err, flags
    # --max-tokens is a shell fan-out's tree budget, as --max-cost is (tests/parallel/test_shell_budget.py)
    assert zap("spawn", "--cli", "sh", "--max-tokens", "10", "--", "true").returncode == 0
    proc = zap("spawn", "--max-tokens", "0", "--", "x")
    assert proc.returncode == 2 and "--max-tokens" in proc.err


def test_a_bom_is_not_part_of_a_stdin_task(zap):
    proc = zap("spawn", "--cli", "sh", "-", input="\ufeffecho bom-ok".encode())
    sid = proc.out.strip()
    assert zap("wait", sid).returncode == 0
    assert zap("output", sid).out == "bom-ok\n"


def test_json_views_bound_the_task(zap):
    task = "true # " + "x" * 900_000
    sid = zap("spawn", "--cli", "sh", "-", input=task).out.strip()
    zap("wait", sid, check=True)
    for doc in (zap.json("poll", sid)["subagents"][0], zap.json("list")["subagents"][0]):
        assert doc["task_bytes"] == len(task) and len(doc["task"].encode()) < 3000


def test_output_says_when_it_was_truncated(zap):
    sid = zap.spawn_sh("head -c 1200000 /dev/zero | tr '\\0' b")
    zap("wait", sid, check=True)
    proc = zap("output", sid)
    assert "OUTPUT TRUNCATED (1200000 bytes written; the first and last 512 KB kept)" in proc.err
    doc = zap.json("output", sid)
    assert doc["truncated"] and doc["written_bytes"] == 1200000


def test_max_kept_zero_keeps_everything(zap, tmp_path):
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "config.yaml").write_text("max_kept: 0\n")
    ids = [zap.spawn_sh("true") for _ in range(3)]
    for sid in ids:
        zap("wait", sid, check=True)
    doc = zap.json("gc")
    assert doc["deleted"] == [] and doc["kept"] == 3


def test_deleted_working_directory_is_one_clear_line(zap, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code = ("import os, subprocess, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
            "r = subprocess.run([sys.executable, '-m', 'zapcli', 'spawn', '--cli', 'sh', '--', 'true'], "
            "capture_output=True, text=True); print(r.returncode); print(r.stderr)")
    out = subprocess.run([sys.executable, "-c", code, str(gone)], env=zap.env, capture_output=True,
                         text=True, cwd=zap.cwd).stdout
    assert out.startswith("2\n") and "no longer exists" in out and "Traceback" not in out


def test_state_folder_with_a_file_in_the_way_is_one_line(zap):
    (zap.home).mkdir(parents=True, exist_ok=True)
    (zap.home / "sessions").write_text("not a folder")
    for args in (["list"], ["usage"], ["kill", "--all"], ["spawn", "--cli", "sh", "--", "true"]):
        proc = zap(*args)
        assert "Traceback" not in proc.err, (args, proc.err)
        assert proc.returncode in (0, 1), (args, proc.returncode)


def test_run_json_is_one_document(zap):
    from zapcli.testing import ScriptedServer

    with ScriptedServer([{"turns": [{"text": "all good", "usage": {"prompt_tokens": 5, "completion_tokens": 2}}]}]) as srv:
        env = {**zap.env, "OPENAI_BASE_URL": srv.base_url, "ZAPCLI_MODEL": "m", "OPENAI_API_KEY": "k" * 10}
        proc = subprocess.run([sys.executable, "-m", "zapcli", "run", "--json", "say hi"], env=env,
                              cwd=zap.cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    doc = json.loads(proc.stdout)
    assert doc["status"] == "completed" and doc["report"] == "all good"
    assert doc["run_id"].startswith("run_") and doc["tokens"]["input_tokens"] == 5


def test_poll_never_hides_a_pending_approval(zap):
    from zapcli.testing import ScriptedServer

    with ScriptedServer([{"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
                                    {"text": "done"}]}]) as srv:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="m", OPENAI_API_KEY="k" * 10)
        sid = zap("spawn", "--", "needs approval").out.strip()
        wait_until(lambda: zap.status(sid) == "awaiting_approval", 20, 0.2)
        text = zap("poll", "--no-wait", sid).out
        assert "awaiting_approval" in text and "bash" in text and f"zapcli approve {sid}" in text
        zap("kill", sid)
    assert os.path.exists(zap.trail(sid))


def test_retention_runs_on_spawn_when_over_max_kept(zap, tmp_path):
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "config.yaml").write_text("max_kept: 2\n")
    ids = [zap.spawn_sh("true") for _ in range(4)]
    # nobody runs gc: finishing children and spawns apply the cap, oldest first
    trails = lambda: sorted(p.stem for p in (zap.home / "subagents").glob("*.jsonl"))  # noqa: E731
    wait_until(lambda: len(trails()) <= 2, 15)
    assert ids[-1] in trails()
