"""bash, task_output, task_stop: real processes, real process-group kills."""

from __future__ import annotations

import os
import re
import signal
import time

import psutil
import pytest

from zapcli.agent.types import ToolContext
from zapcli.tools.procs import JobRegistry, group_alive
from zapcli.tools.registry import Toolset
from zapcli.tools.shell import BashTool, TaskOutputTool, TaskStopTool


@pytest.fixture
def jobs():
    registry = JobRegistry()
    yield registry
    registry.close()


@pytest.fixture
def bash(jobs):
    return BashTool(jobs)


def live_members(pgid: int) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (OSError, psutil.Error):
            continue
    return out


def first_int(text: str) -> int:
    return int(re.search(r"\d+", text).group())


def test_runs_and_reports_exit_code(bash, ctx):
    res = bash.run({"command": "echo hello"}, ctx)
    assert res.ok
    assert res.content == "hello\n[exit code: 0]"
    res = bash.run({"command": "echo out; echo err >&2; exit 3"}, ctx)
    assert not res.ok
    assert "out" in res.content and "err" in res.content
    assert res.content.endswith("[exit code: 3]")


def test_runs_in_cwd_with_stdin_closed(bash, ctx, tmp_path):
    sub = tmp_path / "ws" / "sub"
    sub.mkdir()
    ctx.cwd = str(sub)
    assert bash.run({"command": "pwd"}, ctx).content.splitlines()[0] == str(sub)
    res = bash.run({"command": "cat; echo done"}, ctx)  # would hang if stdin were a tty/pipe
    assert res.ok and res.content.startswith("done")


def test_scrubbed_env_reaches_the_command(bash, tmp_path):
    ws = str(tmp_path)
    env = {"PATH": os.environ["PATH"], "HOME": ws, "OPENAI_API_KEY": "sk-leak",
           "DECLARED": "yes"}
    ctx = ToolContext(workspace=ws, cwd=ws, env=env)
    res = bash.run({"command": "env"}, ctx)
    assert "DECLARED=yes" in res.content
    assert "sk-leak" not in res.content  # dropped even if a caller let it through
    assert "PAGER=cat" in res.content


def test_empty_ctx_env_falls_back_to_scrubbed_process_env(bash, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    monkeypatch.setenv("SOME_TOKEN", "tok-leak")
    ctx = ToolContext(workspace=str(tmp_path), cwd=str(tmp_path))
    res = bash.run({"command": "env; command -v ls"}, ctx)
    assert res.ok
    assert "sk-leak" not in res.content and "tok-leak" not in res.content


def test_timeout_kills_the_whole_process_group(bash, ctx):
    started = time.monotonic()
    res = bash.run({"command": "echo $$; sleep 300 & sleep 301", "timeout_s": 1}, ctx)
    assert time.monotonic() - started < 10
    assert not res.ok
    assert "timed out after 1s" in res.content and "killed" in res.content
    pgid = first_int(res.content)
    assert not group_alive(pgid)
    assert live_members(pgid) == []


def test_timeout_kills_a_group_that_ignores_term(bash, ctx):
    res = bash.run({"command": "trap '' TERM; echo $$; sleep 300", "timeout_s": 1}, ctx)
    assert not res.ok and "timed out" in res.content
    assert live_members(first_int(res.content)) == []


def test_deadline_caps_the_timeout(bash, ctx):
    ctx.deadline_monotonic = time.monotonic() + 1
    res = bash.run({"command": "sleep 30", "timeout_s": 100}, ctx)
    assert not res.ok and "deadline" in res.content
    ctx.deadline_monotonic = time.monotonic() - 1
    res = bash.run({"command": "echo never"}, ctx)
    assert not res.ok and "deadline has passed" in res.content and "never" not in res.content


def test_output_is_capped_head_and_tail(bash, ctx):
    cmd = "echo FIRST; head -c 200000 /dev/zero | tr '\\0' a; echo; echo LAST"
    res = bash.run({"command": cmd}, ctx)
    assert res.ok
    assert len(res.content) < 31_000
    assert res.content.startswith("FIRST")
    assert "LAST\n[exit code: 0]" in res.content
    assert re.search(r"\[[\d,]+ bytes folded\]", res.content)


def test_leftover_background_process_does_not_hang_the_call(bash, ctx):
    started = time.monotonic()
    res = bash.run({"command": "echo $$; sleep 60 &"}, ctx)
    try:
        assert time.monotonic() - started < 10
        assert res.ok and "background processes" in res.content
    finally:
        os.killpg(first_int(res.content), signal.SIGKILL)


def test_bad_arguments_are_errors_not_exceptions(bash, ctx, tmp_path):
    assert not bash.run({}, ctx).ok
    assert "unknown argument" in bash.run({"command": "true", "cmd": "x"}, ctx).content
    assert "number" in bash.run({"command": "true", "timeout_s": "soon"}, ctx).content
    assert not bash.run({"command": "   "}, ctx).ok
    assert not bash.run("not a dict", ctx).ok  # type: ignore[arg-type]
    assert bash.run({"command": "true", "timeout_s": "5", "background": None}, ctx).ok
    ctx.cwd = str(tmp_path / "gone")
    res = bash.run({"command": "true"}, ctx)
    assert not res.ok and "does not exist" in res.content


def test_background_job_output_and_exit_code(jobs, ctx):
    bash, output = BashTool(jobs), TaskOutputTool(jobs)
    res = bash.run({"command": "echo start; sleep 0.5; echo end; exit 4",
                    "background": True}, ctx)
    assert res.ok and "job_1" in res.content
    res = output.run({"job_id": "job_1", "wait_s": 10}, ctx)
    assert res.ok
    assert res.content.splitlines()[0] == "job_1: done (exit code 4)"
    assert "start" in res.content and "end" in res.content


def test_task_output_while_running(jobs, ctx, wait_until):
    bash, output = BashTool(jobs), TaskOutputTool(jobs)
    bash.run({"command": "echo ready; sleep 300", "background": True}, ctx)
    assert wait_until(lambda: "ready" in output.run({"job_id": "job_1"}, ctx).content)
    assert "running" in output.run({"job_id": "job_1"}, ctx).content


def test_task_stop_kills_the_group(jobs, ctx, wait_until):
    bash, output, stop = BashTool(jobs), TaskOutputTool(jobs), TaskStopTool(jobs)
    bash.run({"command": "echo $$; sleep 300 & sleep 301", "background": True}, ctx)
    assert wait_until(lambda: re.search(r"\d+", output.run({"job_id": "job_1"}, ctx)
                                        .content.split("\n", 1)[1]) is not None)
    pgid = first_int(output.run({"job_id": "job_1"}, ctx).content.split("\n", 1)[1])
    assert live_members(pgid)
    res = stop.run({"job_id": "job_1"}, ctx)
    assert res.ok and "stopped by task_stop" in res.content
    assert live_members(pgid) == []
    assert stop.run({"job_id": "job_1"}, ctx).ok  # already stopped counts as success


def test_background_timeout_kills_the_job(jobs, ctx, wait_until):
    bash, output = BashTool(jobs), TaskOutputTool(jobs)
    res = bash.run({"command": "sleep 300", "background": True, "timeout_s": 1}, ctx)
    assert "killed after 1s" in res.content
    assert wait_until(lambda: "done" in output.run({"job_id": "job_1"}, ctx).content)
    assert "killed at its timeout" in output.run({"job_id": "job_1"}, ctx).content


def test_unknown_job_and_separate_registries(ctx):
    a, b = Toolset(["bash", "task_output"]), Toolset(["task_output"])
    try:
        a.by_name()["bash"].run({"command": "sleep 300", "background": True}, ctx)
        res = b.by_name()["task_output"].run({"job_id": "job_1"}, ctx)
        assert not res.ok and "no background job" in res.content
        assert a.by_name()["task_output"].run({"job_id": "job_1"}, ctx).ok
        pid = a.jobs.get("job_1").proc.pid
    finally:
        a.close()
        b.close()
    assert live_members(pid) == []


def test_job_limit(ctx):
    registry = JobRegistry(max_running=1)
    bash = BashTool(registry)
    try:
        assert bash.run({"command": "sleep 300", "background": True}, ctx).ok
        res = bash.run({"command": "sleep 300", "background": True}, ctx)
        assert not res.ok and "task_stop" in res.content
    finally:
        registry.close()
