"""The helper inside a sandbox: starts each command its host asks for and
says how it ended. Imports only the standard library: it runs by path
(`python -I -S inner.py FD`) inside the sandbox, where zapcli's package is
not needed.

One message per packet on the SOCK_SEQPACKET socket FD, JSON:
- `{"op": "run", "id", "argv", "cwd", "env"}` with the command's output fd
  attached (SCM_RIGHTS) → `{"id", "pid"}` or `{"id", "error"}`; the command
  runs in a session of its own (its pid is its process group), stdin
  /dev/null, stdout and stderr the fd;
- `{"op": "signal", "id", "pgid", "sig"}` → `{"id", "ok"}`;
- `{"op": "alive", "id", "pgid"}` → `{"id", "alive"}` (a live, non-zombie
  member is left in the group);
- and unasked, `{"op": "ready"}` once it is up (bwrap has set up every
  mount), and `{"op": "exit", "pid", "code"}` when a command ends (code as
  Popen's returncode: negative for a signal).
End of file on the socket (the host closed it or died) ends the helper, and
with it, the kernel ends everything else in the sandbox's pid namespace.

The helper is the namespace's pid 1 (bwrap `--as-pid-1`), so nothing inside
can signal it (`kill -9 -1` spares pid 1; a signal it has no handler for is
dropped), and it reaps every process orphaned inside. It is non-dumpable:
no command, root or not, can read or write its memory or ptrace it (it holds
the only way out to its host). It exits only when the host goes, or is
killed from outside; either way the kernel then ends the whole sandbox.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys

MAX_MESSAGE = 1 << 20
PR_SET_DUMPABLE = 4


def harden() -> None:
    """Non-dumpable, and no handler (so, as pid 1, no way to be stopped from
    inside) for the signals Python would otherwise catch."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is left in process group `pgid`
    (zombies answer killpg(0) too: /proc says which are). Also what the
    tools use outside a sandbox (`zapcli.tools.procs`). Raises OSError
    where there is no /proc."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def _run(msg: dict, fds: list[int], children: dict[int, subprocess.Popen]) -> dict:
    if not fds:
        return {"error": "no output fd was attached"}
    try:
        proc = subprocess.Popen([str(a) for a in msg["argv"]], cwd=str(msg["cwd"]),
                                env={str(k): str(v) for k, v in msg["env"].items()},
                                stdin=subprocess.DEVNULL, stdout=fds[0], stderr=fds[0],
                                start_new_session=True, close_fds=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    children[proc.pid] = proc
    return {"pid": proc.pid}


def _handle(msg: dict, fds: list[int], children: dict[int, subprocess.Popen]) -> dict:
    op = msg.get("op")
    if op == "run":
        reply = _run(msg, fds, children)
    elif op == "signal":
        try:
            os.killpg(int(msg["pgid"]), int(msg["sig"]))
            reply = {"ok": True}
        except (OSError, ValueError, KeyError, TypeError):
            reply = {"ok": False}
    elif op == "alive":
        try:
            reply = {"alive": group_alive(int(msg.get("pgid", 0)))}
        except OSError:
            reply = {"alive": True}
    else:
        reply = {"error": f"unknown op {op!r}"}
    return {"id": msg.get("id"), **reply}


def _reap(sock: socket.socket, children: dict[int, subprocess.Popen]) -> None:
    """Every ended process: the commands' (said to the host) and, as pid 1,
    whatever was orphaned inside the sandbox (reaped so no zombie is left)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        proc = children.pop(pid, None)
        if proc is not None:
            proc.returncode = os.waitstatus_to_exitcode(status)
            sock.send(json.dumps({"op": "exit", "pid": pid, "code": proc.returncode}).encode())


def serve(sock: socket.socket) -> int:
    harden()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, subprocess.Popen] = {}
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, "host")
    sel.register(wake_r, selectors.EVENT_READ, "child")
    sock.send(json.dumps({"op": "ready"}).encode())
    while True:
        for key, _ in sel.select():
            if key.data == "child":
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
            else:
                try:
                    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 4)
                except OSError:
                    data, fds = b"", []
                if not data:
                    return 0
                try:
                    reply = _handle(json.loads(data), fds, children)
                except ValueError:
                    reply = {"error": "not JSON"}
                finally:
                    for fd in fds:
                        os.close(fd)
                sock.send(json.dumps(reply).encode())
            _reap(sock, children)


if __name__ == "__main__":
    try:
        sys.exit(serve(socket.socket(fileno=int(sys.argv[1]))))
    except (BrokenPipeError, ConnectionResetError):
        sys.exit(0)
