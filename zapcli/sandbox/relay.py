"""The inside half of what crosses a whole-program sandbox's wall (an agent
CLI's): each connection is carried over a unix socket that the host bound
into the sandbox, where zapcli answers it outside. Imports only the standard
library: it runs by path (`python -I -S relay.py ...`) inside the sandbox.

- `relay.py mcp SOCKET`: an MCP server for the program's config. Its stdin
  and stdout are carried to SOCKET, where the host starts the real server
  (zapcli's team or approval server, or one a definition declares) outside
  the sandbox, so neither the server's state nor its keys come inside.
- `relay.py run [--tcp PORT=SOCKET] [--connect PORT=HOST:PORT=SOCKET] -- CMD...`:
  with the network off (a loopback of the sandbox's own), listen on
  127.0.0.1:PORT and carry each connection to SOCKET, where the host opens
  the one address that socket stands for (the model's endpoint), then exec
  CMD. `--tcp` relays bytes (an endpoint on this machine, at the same port
  inside); `--connect` is an HTTP proxy that answers only `CONNECT HOST:PORT`
  (a remote endpoint, reached through HTTPS_PROXY); with neither, it only
  keeps CMD. The relay is the sandbox's pid 1 (bwrap `--as-pid-1`, in place
  of bubblewrap's reaper, a dumpable fork of bwrap holding CMD's stdout): it
  forks CMD, keeps none of CMD's files (its stdout is the stream zapcli reads
  the CLI's word from), reaps what is orphaned inside, and ends with CMD's
  status — the kernel then ends the rest of the namespace. It is not
  dumpable, so no command inside reaches its files or memory.

A socket path may be longer than a unix address holds: the relay connects
from the socket's folder by its name.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
import threading
from collections.abc import Callable

CHUNK = 1 << 16
HEAD_LIMIT = 8192


def connect(path: str) -> socket.socket:
    """A stream connection to the unix socket at `path` (of any length)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    folder, name = os.path.split(path)
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(folder or ".")
        sock.connect(name)
    finally:
        os.fchdir(here)
        os.close(here)
    return sock


def pump(src: socket.socket | int, dst: socket.socket | int) -> None:
    """Copy until end of file, then half-close `dst` so its reader sees it."""
    try:
        while True:
            data = src.recv(CHUNK) if isinstance(src, socket.socket) else os.read(src, CHUNK)
            if not data:
                break
            if isinstance(dst, socket.socket):
                dst.sendall(data)
            else:
                view = memoryview(data)
                while view:
                    view = view[os.write(dst, view):]
    except OSError:
        pass
    try:
        if isinstance(dst, socket.socket):
            dst.shutdown(socket.SHUT_WR)
        else:
            os.close(dst)
    except OSError:
        pass


def mcp(path: str) -> int:
    """stdin/stdout <-> the host's server at `path`, until either side ends."""
    try:
        sock = connect(path)
    except OSError as exc:
        print(f"zapcli relay: cannot reach {path}: {exc}", file=sys.stderr)
        return 1
    out = threading.Thread(target=pump, args=(sock, 1), daemon=True)
    out.start()
    pump(0, sock)
    out.join()
    return 0


def _carry(client: socket.socket, path: str, head: bytes = b"") -> None:
    try:
        upstream = connect(path)
    except OSError:
        client.close()
        return
    if head:
        upstream.sendall(head)
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _proxy(client: socket.socket, target: str, path: str) -> None:
    """One HTTP proxy connection: only `CONNECT target` is let through."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
        data = client.recv(HEAD_LIMIT)
        if not data:
            client.close()
            return
        head += data
    line, _, rest = head.partition(b"\r\n")
    parts = line.split()
    if len(parts) < 2 or parts[0] != b"CONNECT" or parts[1].decode("latin-1").lower() != target:
        client.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        client.close()
        return
    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    _carry(client, path, rest.partition(b"\r\n\r\n")[2])


def _bind(port: int) -> list[socket.socket]:
    """Listening sockets on 127.0.0.1:port, and on [::1]:port where the
    sandbox has IPv6 (a `localhost` endpoint may resolve to either)."""
    out = []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        srv = socket.socket(family, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind((host, port))
        except OSError:
            srv.close()
            if family == socket.AF_INET:
                raise
            continue
        srv.listen(64)
        out.append(srv)
    return out


def _serve(srv: socket.socket, serve: Callable[[socket.socket], None]) -> None:
    def loop() -> None:
        while True:
            client, _ = srv.accept()
            threading.Thread(target=serve, args=(client,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def _listeners(opts: list[str]) -> list[tuple[socket.socket, Callable[[socket.socket], None]]]:
    out: list[tuple[socket.socket, Callable[[socket.socket], None]]] = []
    for flag, spec in zip(opts[::2], opts[1::2], strict=True):
        if flag == "--tcp":
            port, path = spec.split("=", 1)
            serve = functools.partial(_carry, path=path)
        elif flag == "--connect":
            port, target, path = spec.split("=", 2)
            serve = functools.partial(_proxy, target=target.lower(), path=path)
        else:
            raise OSError(f"unknown option {flag}")
        out += [(srv, serve) for srv in _bind(int(port))]
    return out


def run(argv: list[str]) -> int:
    """`--tcp PORT=SOCKET` / `--connect PORT=HOST:PORT=SOCKET` ... `--` CMD."""
    cut = argv.index("--")
    opts, cmd = argv[:cut], argv[cut + 1:]
    try:
        listeners = _listeners(opts)  # listening before CMD starts: it connects at once
    except (OSError, ValueError) as exc:
        print(f"zapcli relay: cannot listen: {exc}", file=sys.stderr)
        return 1
    import signal

    child = os.fork()
    if child == 0:
        for srv, _ in listeners:
            srv.close()
        for name in ("SIGPIPE", "SIGXFSZ"):  # Python ignores them, and exec keeps what is ignored
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        try:
            os.execvp(cmd[0], cmd)
        except OSError as exc:
            print(f"zapcli relay: cannot run {cmd[0]}: {exc}", file=sys.stderr)
        os._exit(127)
    _let_go({srv.fileno() for srv, _ in listeners})
    for srv, serve in listeners:
        _serve(srv, serve)
    return _reap(child)


def _let_go(keep: set[int]) -> None:
    """Hold none of CMD's files: its stdout (the stream zapcli reads its
    word from) and whatever else it was given stay CMD's alone."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own, closed already


def _reap(child: int) -> int:
    """As the sandbox's pid 1: reap whatever is orphaned inside; end with
    CMD, with its exit status (128 + N for a signal, as bubblewrap says it)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def unreachable() -> None:
    """This process out of reach of the others in the sandbox (the commands
    the CLI runs, same user): not dumpable, so no `/proc/<pid>/fd`,
    `pidfd_getfd`, ptrace or `/proc/<pid>/mem` of its sockets and pipes
    (they hold no capability to pass that check). Where libc has no prctl,
    nothing changes."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    unreachable()  # an exec (run's CMD) makes the program dumpable again: see execonly
    if len(sys.argv) == 3 and sys.argv[1] == "mcp":
        sys.exit(mcp(sys.argv[2]))
    if len(sys.argv) > 2 and sys.argv[1] == "run" and "--" in sys.argv:
        sys.exit(run(sys.argv[2:]))
    print("usage: relay.py mcp SOCKET | relay.py run [--tcp PORT=SOCKET] "
          "[--connect PORT=HOST:PORT=SOCKET] -- CMD...", file=sys.stderr)
    sys.exit(2)
