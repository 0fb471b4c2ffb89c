"""Runs the real Gemini CLI the way the adapter says (argv, env, files in the
private config home, task on stdin from a writer thread, stdout pumped from
the start) against a scripted Gemini server, and feeds its stdout through the
adapter's parser. A stand-in for the lead's runner, for these tests only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapcli.backends.clis.base import CliLaunch, CliRequest, Record
from zapcli.backends.clis.gemini import GeminiBackend, GeminiParser
from zapcli.testing.server import ScriptedServer
from zapcli.trail.model import Outcome

API_KEY = "gemini-test-key-0123456789"


@dataclass
class Run:
    launch: CliLaunch
    lines: list[bytes]
    stderr: str
    exit_code: int | None
    elapsed: float
    records: list[Record] = field(default_factory=list)
    outcome: Outcome | None = None
    parser: GeminiParser | None = None

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for t, f in self.records if t == kind]


def base_env(srv: ScriptedServer, home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "LANG": "C.UTF-8", "GOOGLE_GEMINI_BASE_URL": srv.root_url, "GEMINI_API_KEY": API_KEY}


def request(tmp: Path, srv: ScriptedServer, task: str, **kw: Any) -> CliRequest:
    ws = tmp / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    cfg = tmp / "cfg"
    cfg.mkdir(mode=0o700, exist_ok=True)
    return CliRequest(task=task, cwd=str(ws), workspace=str(ws), config_home=cfg,
                      env=base_env(srv, Path(os.environ["HOME"])), **kw)


def write_files(launch: CliLaunch, home: Path) -> None:
    for rel, text in launch.files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)


def run_gemini(binary: Path, req: CliRequest, timeout: float = 120.0,
               save: Path | None = None) -> Run:
    adapter = GeminiBackend()
    launch = adapter.launch(req, [str(binary)])
    write_files(launch, req.config_home)
    t0 = time.monotonic()
    # stdout to a file, as the runner does: in its own session gemini may exit
    # before a pipe's pending writes are flushed, losing its answer
    stream = open(req.config_home / "stdout.jsonl", "w+b")  # noqa: SIM115
    proc = subprocess.Popen(launch.argv, env=launch.env, cwd=req.cwd, start_new_session=True,
                            stdin=subprocess.PIPE if launch.stdin is not None else subprocess.DEVNULL,
                            stdout=stream, stderr=subprocess.PIPE)
    lines: list[bytes] = []
    err: list[bytes] = []

    def pump_out() -> None:
        proc.wait()
        stream.seek(0)
        *done, buf = stream.read().split(b"\n")
        lines.extend(ln.rstrip(b"\r") for ln in done)
        if buf:
            lines.append(buf)

    def pump_err() -> None:
        assert proc.stderr is not None
        while chunk := proc.stderr.read1(1 << 16):
            err.append(chunk)

    def feed_stdin() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(launch.stdin or b"")
        except BrokenPipeError:
            pass
        finally:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass

    threads = [threading.Thread(target=f, daemon=True) for f in (pump_out, pump_err)]
    if launch.stdin is not None:
        threads.append(threading.Thread(target=feed_stdin, daemon=True))
    for t in threads:
        t.start()
    try:
        code: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
    for t in threads:
        t.join(5)
    elapsed = time.monotonic() - t0
    if save is not None:
        save.write_bytes(b"".join(ln + b"\n" for ln in lines))
    run = Run(launch, lines, b"".join(err).decode("utf-8", "replace"), code, elapsed)
    run.parser = adapter.parser()
    for ln in lines:
        try:
            event = json.loads(ln.decode("utf-8", "replace"))
        except ValueError:
            run.records.append(("diagnostic", {"dimension": "cli", "name": "not json",
                                               "message": ln[:200].decode("utf-8", "replace")}))
            continue
        run.records += run.parser.feed(event)
    run.outcome = run.parser.finish(code, run.stderr[-4000:])
    return run
