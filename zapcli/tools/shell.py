"""The `bash`, `task_output` and `task_stop` tools.
Imports: stdlib, zapcli.agent.types, zapcli.tools (_base, env, procs), zapcli.tracecontext
(a command runs as the child span of its `execute_tool` span).

The three tools of one toolset share one `JobRegistry`, passed in when they
are built, so background jobs of two loops never mix.
"""

from __future__ import annotations

import os
import time
from typing import Any

from zapcli import tracecontext
from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.paths import work_env
from zapcli.tools._base import BaseTool, ToolError, capped_timeout, fail, ok, remaining_s, schema
from zapcli.tools.env import NEVER_PASSED, scrubbed_env
from zapcli.tools.procs import Job, JobRegistry, run_foreground

DEFAULT_TIMEOUT_S = 120.0
MAX_WAIT_S = 60.0
# Stdin is /dev/null: make the usual interactive programs not wait for a human.
NON_INTERACTIVE = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


def command_env(ctx: ToolContext) -> dict[str, str]:
    """ctx.env is already scrubbed by whoever built the context; an empty one
    (a context built without thought) falls back to the scrubbed process env.
    The model's key is dropped again either way."""
    env = dict(ctx.env) if ctx.env else scrubbed_env(os.environ)
    for name in NEVER_PASSED:
        env.pop(name, None)
    for name, value in NON_INTERACTIVE.items():
        env.setdefault(name, value)
    work_env(env)  # the caller's own PATH, as set: this is the work, not a lookup of zapcli's
    return tracecontext.for_work(env, tracecontext.tool_key(ctx.call_id)) if ctx.call_id else env


def _check_cwd(ctx: ToolContext) -> None:
    if not os.path.isdir(ctx.cwd):
        raise ToolError(f"the working directory {ctx.cwd} does not exist; nothing was run")


class BashTool(BaseTool):
    spec = ToolSpec(
        name="bash",
        description=(
            "Run a shell command with `bash -c` in the working directory and return its "
            "combined stdout+stderr and exit code. Stdin is empty (/dev/null): never run "
            "interactive programs; pass flags such as --yes or --no-pager instead. Output "
            "over 30,000 characters keeps its head and tail with a fold marker, so filter "
            "noisy output (| tail, | grep). Each call starts a fresh shell: `cd` and "
            "exported variables do not carry over, so chain steps with &&. The command "
            "and every process it started are killed after `timeout_s` seconds (default "
            "120). For servers, watchers or anything long, set `background: true`: you get "
            "a job id at once; read its output with task_output, end it with task_stop. "
            "Prefer the read, grep, glob, write and edit tools over cat, grep, find, sed "
            "or echo > for files. In a sandbox, other tools' settings that do not exist yet "
            "(.npmrc, mise.toml, .envrc, .claude/, ...) show as empty read-only files and "
            "folders at the workspace's top: the sandbox holds them, they are not the "
            "project's, and they are gone when you are."),
        parameters=schema({
            "command": {"type": "string", "description": "The shell command line to run."},
            "timeout_s": {"type": "number", "minimum": 1,
                          "description": "Seconds before the command is killed. Default 120 "
                                         "(background jobs: no limit unless given)."},
            "background": {"type": "boolean",
                           "description": "Start as a background job and return its id at "
                                          "once. Default false."},
        }, ["command"]),
    )

    def __init__(self, jobs: JobRegistry):
        self.jobs = jobs

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args["command"]
        if not command.strip():
            raise ToolError("`command` is empty; give the shell command to run")
        _check_cwd(ctx)
        if args.get("background"):
            return self._background(command, args.get("timeout_s"), ctx)
        timeout, capped = capped_timeout(ctx, float(args.get("timeout_s", DEFAULT_TIMEOUT_S)))
        res = run_foreground(command, ctx.cwd, command_env(ctx), timeout, ctx.sandbox)
        out = res.output.rstrip("\n") or "(no output)"
        if res.timed_out:
            why = "the run's deadline" if capped else f"timeout_s={timeout:g}"
            return fail(f"{out}\n[timed out after {timeout:.0f}s ({why}); the command and "
                        "its child processes were killed. Make it faster, give a larger "
                        "timeout_s, or run it with background: true]")
        notes = _sandbox_notes(res.output, res.lost, ctx)
        if res.lingering:
            notes.append("the command left background processes (started with &) that "
                         "still hold its output; output after it exited is not shown. "
                         "Use background: true for long-running processes")
        code = res.exit_code
        tail = f"[exit code: {code}]" if code is None or code >= 0 else \
            f"[killed by signal {-code}]"
        text = "\n".join([out, *(f"[note: {n}]" for n in notes), tail])
        return ok(text) if code == 0 else fail(text)

    def _background(self, command: str, timeout_s: float | None,
                    ctx: ToolContext) -> ToolResult:
        left = remaining_s(ctx)
        if left is not None:
            if left <= 0:
                raise ToolError("the run's deadline has passed; nothing was started")
            timeout_s = left if timeout_s is None else min(timeout_s, left)
        try:
            job = self.jobs.start(command, ctx.cwd, command_env(ctx), timeout_s, ctx.sandbox)
        except RuntimeError as e:
            raise ToolError(str(e)) from None
        limit = f"; it is killed after {timeout_s:.0f}s" if timeout_s is not None else ""
        return ok(f"started background job {job.job_id} (pid {job.proc.pid}){limit}. Read its "
                  f"output with task_output(job_id=\"{job.job_id}\"); stop it with "
                  f"task_stop(job_id=\"{job.job_id}\").")


def _sandbox_notes(output: str, lost: bool, ctx: ToolContext) -> list[str]:
    """What the sandbox did to a command: ended under it, or refused a write
    (each refused path named with the setting that allows it)."""
    if ctx.sandbox is None:
        return []
    from zapcli.sandbox.refusals import explain

    notes = ["the sandbox ended under this command (its helper died: killed from outside it, or "
             "out of memory); "
             "its processes ended with it, and the next command gets a fresh sandbox"] if lost else []
    home = (ctx.env or {}).get("HOME") or os.environ.get("HOME", "")
    return notes + explain(output, ctx.sandbox.policy, home)


def _find(jobs: JobRegistry, job_id: str) -> Job:
    job = jobs.get(job_id)
    if job is None:
        known = ", ".join(jobs.ids()) or "none have been started"
        raise ToolError(f"no background job {job_id!r}; known jobs: {known}")
    return job


def _status(job: Job) -> str:
    elapsed = time.monotonic() - job.started
    if not job.done:
        return f"{job.job_id}: running for {elapsed:.0f}s"
    code = job.exit_code
    if job.timed_out:
        how = "killed at its timeout"
    elif job.stopped:
        how = "stopped by task_stop"
    elif code is not None and code < 0:
        how = f"killed by signal {-code}"
    else:
        how = f"exit code {code}"
    return f"{job.job_id}: done ({how})"


class TaskOutputTool(BaseTool):
    spec = ToolSpec(
        name="task_output",
        description=(
            "Read the output so far of a background job started by bash with "
            "background: true, and whether it is done and with which exit code. Output "
            "is cumulative (everything since the start, head and tail kept past 30,000 "
            "characters). Set `wait_s` to wait up to that many seconds (at most 60) for "
            "the job to finish instead of polling in a loop."),
        parameters=schema({
            "job_id": {"type": "string", "description": "The id bash returned, e.g. job_1."},
            "wait_s": {"type": "number", "minimum": 0,
                       "description": "Wait up to this many seconds for the job to end. "
                                      "Default 0 (answer at once)."},
        }, ["job_id"]),
    )

    def __init__(self, jobs: JobRegistry):
        self.jobs = jobs

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        job = _find(self.jobs, args["job_id"])
        wait = min(float(args.get("wait_s", 0)), MAX_WAIT_S)
        left = remaining_s(ctx)
        if left is not None:
            wait = max(0.0, min(wait, left))
        if wait > 0 and not job.done:
            job.wait(wait)
        elif job.done:
            job.reader.join(timeout=0.2)
        text = job.output.text().rstrip("\n")
        notes = _sandbox_notes(text, bool(getattr(job.proc, "lost", False)), ctx)
        return ok("\n".join([_status(job), text or "(no output yet)",
                              *(f"[note: {n}]" for n in notes)]))


class TaskStopTool(BaseTool):
    spec = ToolSpec(
        name="task_stop",
        description=(
            "Stop a background job started by bash with background: true: its whole "
            "process group gets SIGTERM, then SIGKILL after 2 seconds. Stopping a job "
            "that already ended is fine. Returns the job's final output."),
        parameters=schema({
            "job_id": {"type": "string", "description": "The id bash returned, e.g. job_1."},
        }, ["job_id"]),
    )

    def __init__(self, jobs: JobRegistry):
        self.jobs = jobs

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        job = _find(self.jobs, args["job_id"])
        job.stop()
        output = job.output.text().rstrip("\n") or "(no output)"
        return ok(f"{_status(job)}\n{output}")
