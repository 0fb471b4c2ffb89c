"""One long-lived sandbox for one toolset: bubblewrap started once (on the
first command), its helper (`zapcli.sandbox.inner`) starting every command
inside it. Imports only the standard library and this room.

A new set of namespaces per command would cost more than the command
(`true` takes a few ms; a bwrap start several times that): here a command
costs one fork in the helper and two small messages. Commands of one
toolset share the sandbox's pid namespace and scratch folder, as they share
the working folder outside one. Pids are the sandbox's own: signals and
liveness go through the helper (`SandboxedProcess.signal_group`,
`group_alive`); nothing outside is ever signalled by a sandbox pid.

The helper is the sandbox's pid 1: nothing inside can kill it. When it dies
all the same (killed from outside, out of memory), the kernel ends every
process in the sandbox with it, the call waiting on a command returns at
once (the command counts as killed, `SandboxedProcess.lost`), and the next
command starts a fresh sandbox. A start waits for the helper to say it is
ready; bwrap that fails to set up is tried once more (a socket it was to
hide may have gone meanwhile), then said in plain words. The control
files' placeholders are made (and held) before bwrap starts and let go of
once it has ended (`placeholders`).
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
from zapcli.sandbox.bwrap import STARTS, on_a_gone_socket
from zapcli.sandbox.bwrap import argv as bwrap_argv
from zapcli.sandbox.bwrap import environment as sandbox_environment
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
        self.lost = False  # its sandbox ended under it (the helper died)
        self._ended = threading.Event()

    def _end(self, code: int, lost: bool = False) -> None:
        if self.returncode is None:
            self.returncode, self.lost = code, lost
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


class _SetupFailed(SandboxError):
    """bwrap ended before its helper said it was ready."""


class _Generation:
    """One start of the sandbox: its socket, bwrap, whether the helper said
    it is ready and whether it is gone."""

    def __init__(self, sock: socket.socket, proc: subprocess.Popen[bytes]):
        self.sock, self.proc = sock, proc
        self.ready = threading.Event()
        self.dead = False


def _interpreter(python: str) -> tuple[str, ...]:
    """What the helper needs to see to start: its interpreter and its own
    file (kept in view where the policy hides the folder they are in)."""
    return tuple(dict.fromkeys(os.path.realpath(p) for p in (
        python, sys.base_prefix, os.path.dirname(INNER)) if p))


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
        self._gen: _Generation | None = None
        self._replies: dict[int, dict[str, Any]] = {}
        self._running: dict[int, SandboxedProcess] = {}
        self._early: dict[int, int] = {}  # exits read before their run's reply was taken
        self._next = 0
        self._closed = False
        self.starts = 0  # the sandboxes started (their helper said it was ready)
        self.ended: int | None = None  # how the last one ended at `close` (bwrap's exit code)
        self._line: list[str] = []  # the last start's bwrap command line

    def argv(self, fd: int) -> list[str]:
        """bwrap's command line with the helper as the sandbox's pid 1: no
        command inside can signal it, and when it dies the kernel ends
        everything in its namespace (so a dead helper never leaves a command
        running unwatched)."""
        policy = self._held.policy if self._held is not None else self.policy
        cmd = self._line = bwrap_argv(policy, self.bwrap, keep=_interpreter(self.python))
        # the interpreter's own file, kept in view, not a link to it that may lie in a folder the
        # sandbox hides (a venv under /tmp): the helper needs the standard library alone (-I -S)
        python = os.path.realpath(self.python)
        return [cmd[0], "--as-pid-1", *cmd[1:], python, "-I", "-S", INNER, str(fd)]

    def _start(self) -> _Generation:
        with self._start_lock:
            if self._closed:
                raise SandboxError("the sandbox was closed")
            gen = self._gen
            if gen is not None and not gen.dead and gen.proc.poll() is None:
                return gen
            self._stop(gen)
            made = 0
            while True:
                made += 1
                try:
                    return self._launch()
                except _SetupFailed as exc:
                    # a socket that went away between the look and the mount: look again
                    if made < STARTS and on_a_gone_socket(self._line, str(exc)):
                        continue
                    raise SandboxError(f"the sandbox could not be set up ({exc}); nothing was "
                                       "run. zapcli doctor checks the sandbox") from None

    def _stop(self, gen: _Generation | None) -> None:
        """Forget a sandbox that ended (or whose helper died): its commands
        count as killed, and bwrap goes if it has not yet."""
        self._reset()
        if gen is None:
            return
        if gen.proc.poll() is None:
            gen.proc.kill()
            gen.proc.wait()
        if gen.proc.stderr is not None:
            gen.proc.stderr.close()
        self._let_go()  # bwrap has ended: nothing mounts them any more

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

    def _launch(self) -> _Generation:
        self._hold()
        host, inner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = subprocess.Popen(
                self.argv(inner.fileno()), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_helper_env(),
                pass_fds=(inner.fileno(),), start_new_session=True, close_fds=True)
        except OSError as exc:
            host.close()
            self._let_go()
            raise SandboxError(f"the sandbox could not start: {exc}") from None
        finally:
            inner.close()
        if self.on_start is not None:
            self.on_start(proc.pid)
        gen = self._gen = _Generation(host, proc)
        threading.Thread(target=self._read, args=(gen,), daemon=True,
                         name="zapcli-sandbox").start()
        if gen.ready.wait(REPLY_TIMEOUT_S) and not gen.dead:
            self.starts += 1  # one that came up (a set-up that failed is made again, uncounted)
            return gen
        said = self._why_gone(gen)
        self._stop(gen)
        self._gen = None
        raise _SetupFailed(said)

    def _reset(self) -> None:
        """Forget a sandbox that ended: its commands count as killed."""
        gen = self._gen
        if gen is not None:
            gen.dead = True
            try:  # the helper's end of file, and `_read`'s recv woken: close alone does neither
                gen.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            gen.sock.close()
        with self._cond:
            for proc in self._running.values():
                proc._end(LOST_CODE, lost=True)
            self._running.clear()
            self._early.clear()
            self._cond.notify_all()

    def _read(self, gen: _Generation) -> None:
        while True:
            try:
                data = gen.sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            try:
                msg = json.loads(data)
            except ValueError:
                continue
            with self._cond:
                if msg.get("op") == "ready":
                    gen.ready.set()
                elif msg.get("op") == "exit":
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
            gen.dead = True
            gen.ready.set()
            if self._gen is gen:
                for running in self._running.values():
                    running._end(LOST_CODE, lost=True)
                self._running.clear()
            self._cond.notify_all()

    def _send(self, msg: dict[str, Any], fds: tuple[int, ...]) -> tuple[int, _Generation]:
        """Send one request (its id and the sandbox it went to returned). A
        helper that died since the last one is replaced once: nothing of this
        request has run yet."""
        with self._cond:
            self._next += 1
            rid = self._next
        data = json.dumps({**msg, "id": rid}).encode()
        for attempt in (1, 2):
            gen = self._start()
            with self._send_lock:
                try:
                    socket.send_fds(gen.sock, [data], list(fds)) if fds else gen.sock.send(data)
                    return rid, gen
                except OSError as exc:
                    if attempt == 2:
                        raise SandboxError(f"the sandbox is gone ({exc})") from None
            gen.dead = True
        raise AssertionError("unreachable")

    def _request(self, msg: dict[str, Any], fds: tuple[int, ...] = ()
                 ) -> tuple[dict[str, Any], _Generation]:
        rid, gen = self._send(msg, fds)
        end = time.monotonic() + REPLY_TIMEOUT_S
        with self._cond:
            while rid not in self._replies:
                left = end - time.monotonic()
                if left <= 0 or gen.dead:
                    raise SandboxError("the sandbox ended before it answered (its helper "
                                       "died); the next command starts a new one"
                                       if gen.dead else "the sandbox did not answer")
                self._cond.wait(min(left, 0.5))
            return self._replies.pop(rid), gen

    @staticmethod
    def _why_gone(gen: _Generation) -> str:
        """What bwrap said as it ended (its last line), for a sandbox that
        never became ready."""
        err = b""
        try:
            gen.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            pass
        if gen.proc.poll() is not None and gen.proc.stderr is not None:
            try:
                err = gen.proc.stderr.read(2000) or b""
            except OSError:
                pass
        said = err.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap said: {said[-1]}" if said else "it did not answer"

    def run(self, argv: list[str], cwd: str, env: dict[str, str], out_fd: int) -> SandboxedProcess:
        """Start `argv` in the sandbox; stdout and stderr to `out_fd`, TMPDIR
        and the package caches in the scratch folder. Raises SandboxError."""
        env = dict(env, ZAPCLI_SANDBOXED="1")  # a zapcli inside says why it cannot write
        env.update(sandbox_environment(self.policy, env))  # TMPDIR, package caches (C40)
        reply, gen = self._request({"op": "run", "argv": argv, "cwd": cwd, "env": env},
                                   (out_fd,))
        if "error" in reply or not isinstance(reply.get("pid"), int):
            raise SandboxError(str(reply.get("error") or "the sandbox gave no pid"))
        proc = SandboxedProcess(self, int(reply["pid"]), argv)
        with self._cond:
            early = self._early.pop(proc.pid, None)
            if early is not None:
                proc._end(early)
            elif gen.dead or self._gen is not gen:  # its helper died as the reply came
                proc._end(LOST_CODE, lost=True)
            else:
                self._running[proc.pid] = proc
        return proc

    def signal_group(self, pgid: int, sig: int) -> bool:
        try:
            return bool(self._request({"op": "signal", "pgid": pgid, "sig": int(sig)})[0].get("ok"))
        except SandboxError:
            return False

    def group_alive(self, pgid: int) -> bool:
        try:
            return bool(self._request({"op": "alive", "pgid": pgid})[0].get("alive"))
        except SandboxError:
            return False

    def close(self, grace_s: float = 2.0) -> None:
        """End the sandbox: the helper exits at end of file, and with it the
        pid namespace and everything left in it."""
        with self._start_lock:
            self._closed = True
            gen = self._gen
            self._reset()
        if gen is None:
            with self._start_lock:
                self._let_go()
            return
        proc = gen.proc
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, 9)
            except OSError:
                pass
            proc.wait()
        self.ended = proc.returncode  # 0: the helper ended at its end of file; -9: killed
        if proc.stderr is not None:
            proc.stderr.close()
        with self._start_lock:
            self._let_go()  # bwrap has ended: nothing mounts them any more
