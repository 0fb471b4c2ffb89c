"""The outside half of what crosses an agent CLI's sandbox wall (issue 27
item 10): `Broker` listens on unix sockets bound into the sandbox and
answers each connection outside it — an MCP server session, or a TCP
connection to the model's endpoint. The inside half is
`zapcli.sandbox.relay`. Every MCP connection goes through its `McpGate`
(`zapcli.backends.cli_mcpgate`): a socket starts its server for the CLI's
one session (the first), and on it the server's code runs only as
zapcli's approvals allow; a later connection starts nothing.

Imports the standard library, `zapcli.backends.clis.base` (McpServer),
`cli_mcpgate`, `cli_httpgate` (a plain-HTTP endpoint's requests) and
`zapcli.sandbox.relay` (its byte pump).
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

from zapcli.backends.cli_mcpgate import McpGate
from zapcli.backends.clis.base import McpServer
from zapcli.sandbox import relay

TURNED_AT_ONCE = 4  # later sessions answered with a refusal at once; more are closed unanswered
TCP_AT_ONCE = 64  # connections to the model's endpoint carried at once, per socket


class Broker:
    """The sockets bound into the sandbox, answered outside: an MCP socket's
    admitted connection is one session of its server (a child of the runner,
    in its process group and carrying the subagent's marker, so kill and the
    leftover sweep reach it); a TCP socket's every connection is one to the
    model's endpoint (a plain-HTTP one's: one for each request it carries).
    Each socket answers a bounded number of connections at once
    (`TURNED_AT_ONCE` later sessions beside the CLI's, `TCP_AT_ONCE` to the
    endpoint): a command holding connections open costs the runner no more
    threads than that."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self._listeners: list[socket.socket] = []
        self._procs: dict[str, list[subprocess.Popen[bytes]]] = {}
        self._lock = threading.Lock()

    def _bind(self, name: str) -> tuple[socket.socket, str]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(f"/proc/self/fd/{self._fd}/{name}")  # a path of any length
        os.chmod(f"/proc/self/fd/{self._fd}/{name}", 0o600)
        sock.listen(16)
        self._listeners.append(sock)
        return sock, str(self.folder / name)

    def _accept(self, sock: socket.socket, serve: Any, at_once: int) -> None:
        """Each connection answered by a thread of its own, `at_once` at most:
        past that (a command in the sandbox holding connections open), a
        connection is closed as soon as it is accepted."""
        slots = threading.BoundedSemaphore(at_once)

        def answer(conn: socket.socket) -> None:
            try:
                serve(conn)
            finally:
                slots.release()

        while True:
            try:
                conn, _ = sock.accept()
            except OSError:  # closed
                return
            if not slots.acquire(blocking=False):
                conn.close()
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True,
                             name="zapcli-broker").start()

    def mcp(self, name: str, server: McpServer, env: dict[str, str], cwd: str,
            gate: McpGate) -> str:
        """A socket whose connection `gate` admits (the CLI's, the first)
        starts `server` outside, its session carried through `gate`; its path. Files are named by number
        (a server's name is any text); its log (the server's stderr) says
        which server it is."""
        slot = f"mcp-{len(self._procs)}"
        self._procs[slot] = []
        sock, path = self._bind(f"{slot}.sock")
        threading.Thread(target=self._accept, daemon=True, name="zapcli-broker", args=(
            sock, lambda conn: self._start(slot, conn, server, env, cwd, gate),
            1 + TURNED_AT_ONCE)).start()
        return path

    def _start(self, name: str, conn: socket.socket, server: McpServer, env: dict[str, str],
               cwd: str, gate: McpGate) -> None:
        proc = None
        if not gate.admits(server):  # the CLI's one session, opened at its launch
            gate.turn_away(conn, server)
            return
        with self._lock:
            live = [p for p in self._procs.get(name, []) if p.poll() is None]
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
            log = os.open(f"{name}.log", flags, 0o600, dir_fd=self._fd)
            os.write(log, f"zapcli: MCP server {server.name!r} started\n".encode())
            try:
                proc = subprocess.Popen([server.command, *server.args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=log, env=env,
                                        cwd=server.cwd or cwd, close_fds=True, bufsize=0)
                live.append(proc)
            except OSError as exc:
                os.write(log, f"zapcli could not start {server.command}: {exc}\n".encode())
            finally:
                os.close(log)
            self._procs[name] = live
        if proc is None:
            conn.close()
            return
        gate.session(conn, proc, server)

    def tcp(self, host: str, port: int, http_prefix: str | None = None) -> str:
        """A socket whose every connection is carried to host:port; its path.
        `http_prefix` (a plain-HTTP endpoint: the path its model API lives
        under, "" for none): only the model API's requests are carried
        (`zapcli.backends.cli_httpgate`); None: the bytes (TLS)."""
        sock, path = self._bind(f"net-{len(self._listeners)}.sock")

        def connect() -> socket.socket:
            upstream = socket.create_connection((host, port), timeout=30)
            upstream.settimeout(None)
            return upstream

        def carry(conn: socket.socket) -> None:
            if http_prefix is not None:  # a connection to the endpoint for each request
                from zapcli.backends import cli_httpgate

                try:
                    cli_httpgate.carry(conn, connect, http_prefix,
                                       f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
                finally:
                    conn.close()
                return
            try:
                upstream = connect()
            except OSError:
                conn.close()
                return
            back = threading.Thread(target=relay.pump, args=(upstream, conn), daemon=True)
            back.start()
            relay.pump(conn, upstream)
            back.join()
            conn.close()
            upstream.close()

        threading.Thread(target=self._accept, args=(sock, carry, TCP_AT_ONCE), daemon=True,
                         name="zapcli-broker").start()
        return path

    def close(self) -> None:
        """Stop answering; servers still running are ended (the runner's tree
        kill has usually ended them already)."""
        for sock in self._listeners:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._listeners.clear()
        with self._lock:
            procs = [p for live in self._procs.values() for p in live]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        try:
            os.close(self._fd)
        except OSError:
            pass
