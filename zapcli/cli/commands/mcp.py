"""`zapcli mcp serve`: parse the address, set up the lock, hand over to
`zapcli.mcpserver`.

Imports `zapcli.mcpserver.server` (and so `mcp`) only when serving, and
`zapcli.mcpserver.lock` (standard library) for the token and the socket.
"""

from __future__ import annotations

from zapcli.errors import UsageError, ZapcliError, param

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket


def address(http: str) -> tuple[str, int]:
    """`[HOST:]PORT` -> (host, port); the host is 127.0.0.1 unless given."""
    host, _, port = http.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise UsageError(f"{param('http')} takes [HOST:]PORT with a port from 0 to 65535, got {http!r}")
    return host, number


def serve(http: str | None = None, socket_path: str | None = None, no_token: bool = False) -> int:
    import anyio

    from zapcli.mcpserver import lock, server

    if http is not None and socket_path is not None:
        raise UsageError("--http and --socket are two ways to serve; give one of them")
    if no_token and http is None:
        raise UsageError("--no-token is for --http (stdio and --socket need no token)")
    try:
        if socket_path is not None:
            return _serve_unix(socket_path)
        if http is None:
            anyio.run(server.serve_stdio)
            return 0
        host, port = address(http)
        if no_token and not lock.is_loopback(host):
            raise UsageError(f"refusing to listen on {host} without a token: anyone who reaches "
                             "it could run commands as you. Drop --no-token (clients send the "
                             "token), or listen on 127.0.0.1")
        token = None if no_token else lock.make_token()
        sock = server.listen(host, port)  # a port in use: one error line, exit 1
        return _serve_tcp(sock, token)
    except lock.LockError as exc:
        raise ZapcliError(str(exc)) from None


def _exit_on_term() -> None:
    """SIGTERM ends us through Python (uvicorn re-raises the signal it caught
    once it has stopped): the `finally` that removes the token file or the
    socket runs."""
    import signal
    import sys

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def _serve_tcp(sock: socket.socket, token: str | None) -> int:
    import anyio

    from zapcli.mcpserver import lock, server
    from zapcli.paths import state_dir

    if token is None:
        anyio.run(server.serve_http, sock, None, None)
        return 0
    path = lock.token_path(state_dir(), sock.getsockname()[1])
    lock.write_token(path, token)
    _exit_on_term()
    try:
        anyio.run(server.serve_http, sock, token, str(path))
    finally:
        lock.remove_token(path, token)
    return 0


def _serve_unix(path: str) -> int:
    import os

    import anyio

    from zapcli.mcpserver import lock, server

    sock = lock.listen_unix(os.path.abspath(path))
    _exit_on_term()
    try:
        anyio.run(server.serve_http, sock, None, None)
    finally:
        try:
            os.unlink(os.path.abspath(path))
        except OSError:
            pass
    return 0
