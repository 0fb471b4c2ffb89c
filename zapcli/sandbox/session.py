"""One long-lived sandbox for one toolset: bubblewrap started once (on the
first command), its helper (`zapcli.sandbox.inner`) starting every command
inside it. Imports only the standard library and this room.

A new set of namespaces per command would cost more than the command
(`true` takes a few ms; a bwrap start several times that): here a command
costs one fork in the helper and two small messages. Commands of one
toolset share the sandbox's pid namespace and scratch folder, as they share
the working folder outside one. Pids are the sandbox's own: signals and
liveness go through the helper (`SandboxedProcess.signal_group`,
`group_alive`); nothing outside is ever signalled by a sandbox pid. When the
helper or bwrap dies, its commands count as killed and the next command
starts a fresh sandbox. The control files' placeholders are made (and held)
before bwrap starts and let go of once it has ended (`placeholders`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zapcli.sandbox import placeholders
from zapcli.sandbox.bwrap import argv as bwrap_argv
from zapcli.sandbox.policy import Policy

INNER = str(Path(__file__).with_name("inner.py"))
REPLY_TIMEOUT_S = 30.0
LOST_CODE = -9  # a command whose sandbox ended under it reads as SIGKILLed


class SandboxError(OSError):
    """The sandbox could not start a command (or start at all)."""


class SandboxedProcess:
    """A command inside a sandbox, with the part of Popen's interface the
    tools use (`pid`, `returncode`, `poll`, `wait`) plus group signals."""

    def __init__(self, box: Sandbox, pid: int, args: list[str]):
        self.box, self.pid, self.args = box, pid, args
        self.returncode: int | None = None
        self._ended = threading.Event()

    def _end(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode if self.returncode is not None else LOST_CODE

    def signal_group(self, sig: int) -> bool:
        """Signal its process group (inside the sandbox); False if none is left."""
        return self.box.signal_group(self.pid, sig)

    def group_alive(self) -> bool:
        return self.box.group_alive(self.pid)


def _helper_env() -> dict[str, str]:
    """bwrap and the helper start with nothing of ours: each command gets its
    own environment with its request."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


class Sandbox:
    """Started lazily by `run`; `close` ends it and everything in it."""

    def __init__(self, policy: Policy, bwrap: str, *, python: str = sys.executable,
                 on_start: Callable[[int], None] | None = None, records: str = ""):
        self.policy, self.bwrap, self.python, self.on_start = policy, bwrap, python, on_start
        self.records = records  # where placeholders are recorded (zapcli's state)
        self._held: placeholders.Held | None = None
        self._start_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._replies: dict[int, dict[str, Any]] = {}
        self._running: dict[int, SandboxedProcess] = {}
        self._early: dict[int, int] = {}  # exits read before their run's reply was taken
        self._next = 0
        self._closed = False
        self.starts = 0

    def argv(self, fd: int) -> list[str]:
        policy = self._held.policy if self._held is not None else self.policy
        return [*bwrap_argv(policy, self.bwrap), self.python, "-I", "-S", INNER, str(fd)]

    def _start(self) -> socket.socket:
        with self._start_lock:
            if self._closed:
                raise SandboxError("the sandbox was closed")
            if self._sock is not None and self._proc is not None and self._proc.poll() is None:
                return self._sock
            if self._proc is not None:  # an earlier one ended, or its helper died
                if self._proc.poll() is None:
                    self._proc.kill()
                    self._proc.wait()
                if self._proc.stderr is not None:
                    self._proc.stderr.close()
            self._reset()
            self._hold()
            host, inner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self._proc = subprocess.Popen(
                    self.argv(inner.fileno()), stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_helper_env(),
                    pass_fds=(inner.fileno(),), start_new_session=True, close_fds=True)
            except OSError as exc:
                host.close()
                self._let_go()
                raise SandboxError(f"the sandbox could not start: {exc}") from None
            finally:
                inner.close()
            self.starts += 1
            if self.on_start is not None:
                self.on_start(self._proc.pid)
            self._sock = host
            threading.Thread(target=self._read, args=(host, self._proc), daemon=True,
                             name="zapcli-sandbox").start()
            return host

    def _hold(self) -> None:
        """The placeholders made afresh for this start (a person may have
        removed one since the last)."""
        self._let_go()
        try:
            self._held = placeholders.hold(self.policy, self.records)
        except OSError as exc:
            raise SandboxError(f"the sandbox could not hold its control files read-only: "
                               f"{exc}") from None

    def _let_go(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.release()

    def _reset(self) -> None:
        """Forget a sandbox that ended: its commands count as killed."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        with self._cond:
            for proc in self._running.values():
                proc._end(LOST_CODE)
            self._running.clear()
            self._early.clear()

    def _read(self, sock: socket.socket, proc: subprocess.Popen[bytes]) -> None:
        while True:
            try:
                data = sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            try:
                msg = json.loads(data)
            except ValueError:
                continue
            with self._cond:
                if msg.get("op") == "exit":
                    pid, code = int(msg.get("pid", 0)), int(msg.get("code", LOST_CODE))
                    target = self._running.pop(pid, None)
                    if target is not None:
                        target._end(code)
                    else:
                        self._early[pid] = code
                elif isinstance(msg.get("id"), int):
                    self._replies[msg["id"]] = msg
                self._cond.notify_all()
        with self._cond:  # the helper is gone: so is everything it ran
            for running in self._running.values():
                running._end(LOST_CODE)
            self._running.clear()
            self._cond.notify_all()

    def _send(self, msg: dict[str, Any], fds: tuple[int, ...]) -> int:
        """Send one request (its id returned). A helper that died since the
        last one (its socket says so before bwrap has exited) is replaced
        once: nothing of this request has run yet."""
        with self._cond:
            self._next += 1
            rid = self._next
        data = json.dumps({**msg, "id": rid}).encode()
        for attempt in (1, 2):
            sock = self._start()
            with self._send_lock:
                try:
                    socket.send_fds(sock, [data], list(fds)) if fds else sock.send(data)
                    return rid
                except OSError as exc:
                    if attempt == 2:
                        raise SandboxError(f"the sandbox is gone ({exc})") from None
            with self._start_lock:
                if self._sock is sock:
                    self._reset()
        raise AssertionError("unreachable")

    def _request(self, msg: dict[str, Any], fds: tuple[int, ...] = ()) -> dict[str, Any]:
        rid = self._send(msg, fds)
        end = time.monotonic() + REPLY_TIMEOUT_S
        with self._cond:
            while rid not in self._replies:
                left = end - time.monotonic()
                if left <= 0 or (self._proc is not None and self._proc.poll() is not None):
                    raise SandboxError(self._why_gone())
                self._cond.wait(min(left, 0.5))
            return self._replies.pop(rid)

    def _why_gone(self) -> str:
        proc = self._proc
        err = b""
        if proc is not None and proc.poll() is not None and proc.stderr is not None:
            try:
                err = proc.stderr.read(2000) or b""
            except OSError:
                pass
        said = err.decode("utf-8", "replace").strip().splitlines()
        return "the sandbox did not answer" + (f": {said[-1]}" if said else "")

    def run(self, argv: list[str], cwd: str, env: dict[str, str], out_fd: int) -> SandboxedProcess:
        """Start `argv` in the sandbox; stdout and stderr to `out_fd`, TMPDIR
        the scratch folder. Raises SandboxError."""
        env = dict(env, ZAPCLI_SANDBOXED="1")  # a zapcli inside says why it cannot write
        if self.policy.scratch:
            env["TMPDIR"] = self.policy.scratch
        reply = self._request({"op": "run", "argv": argv, "cwd": cwd, "env": env}, (out_fd,))
        if "error" in reply or not isinstance(reply.get("pid"), int):
            raise SandboxError(str(reply.get("error") or "the sandbox gave no pid"))
        proc = SandboxedProcess(self, int(reply["pid"]), argv)
        with self._cond:
            early = self._early.pop(proc.pid, None)
            if early is not None:
                proc._end(early)
            else:
                self._running[proc.pid] = proc
        return proc

    def signal_group(self, pgid: int, sig: int) -> bool:
        try:
            return bool(self._request({"op": "signal", "pgid": pgid, "sig": int(sig)}).get("ok"))
        except SandboxError:
            return False

    def group_alive(self, pgid: int) -> bool:
        try:
            return bool(self._request({"op": "alive", "pgid": pgid}).get("alive"))
        except SandboxError:
            return False

    def close(self, grace_s: float = 2.0) -> None:
        """End the sandbox: the helper exits at end of file, and with it the
        pid namespace and everything left in it."""
        with self._start_lock:
            self._closed = True
            proc = self._proc
            self._reset()
        if proc is None:
            return
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, 9)
            except OSError:
                pass
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        with self._start_lock:
            self._let_go()  # bwrap has ended: nothing mounts them any more
