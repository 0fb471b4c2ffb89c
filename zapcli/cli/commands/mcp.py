"""`zapcli mcp serve`: parse the address, set up the lock, hand over to
`zapcli.mcpserver`.

Imports `zapcli.mcpserver.server` (and so `mcp`) only when serving, on stdio
through `zapcli.mcpserver.sdk` (only what stdio needs), and
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

    from zapcli.mcpserver import lock

    if http is not None and socket_path is not None:
        raise UsageError("--http and --socket are two ways to serve; give one of them")
    if no_token and http is None:
        raise UsageError("--no-token is for --http (stdio and --socket need no token)")
    try:
        if socket_path is not None:
            return _serve_unix(socket_path)
        if http is None:
            from zapcli.mcpserver.sdk import stdio_server_module

            anyio.run(stdio_server_module().serve_stdio)  # the SDK's HTTP half left out
            return 0
        host, port = address(http)
        if no_token and not lock.is_loopback(host):
            raise UsageError(f"refusing to listen on {host} without a token: anyone who reaches "
                             "it could run commands as you. Drop --no-token (clients send the "
                             "token), or listen on 127.0.0.1")
        token = None if no_token else lock.make_token()
        from zapcli.mcpserver import server

        sock = server.listen(host, port)  # a port in use: one error line, exit 1
        return _serve_tcp(sock, token)
    except lock.LockError as exc:
        raise ZapcliError(str(exc)) from None


def _exit_on_term() -> None:
    """SIGTERM ends us through Python (uvicorn re-raises the signal it caught
    once it has stopped): the `finally` that removes the token file or the
    socket runs, and the exit code is 143, as for a process the signal ended."""
    import signal
    import sys

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def _run_http(sock: socket.socket, token: str | None, token_file: str | None) -> int:
    """`server.serve_http` until it stops; its exit code. The SystemExit
    of a SIGTERM (`_exit_on_term`) reaches us inside anyio's exception
    group: it is the code, never a traceback."""
    import anyio

    from zapcli.mcpserver import server

    try:
        anyio.run(server.serve_http, sock, token, token_file)
    except BaseException as exc:  # noqa: BLE001 - only an exit goes on as a code
        code = _exit_code(exc)
        if code is None:
            raise
        return code
    return 0


def _exit_code(exc: BaseException) -> int | None:
    """The code of a SystemExit, alone or the only kind in (nested)
    exception groups; None for anything else."""
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else 1
    inner = getattr(exc, "exceptions", None)
    if not inner:
        return None
    codes = [_exit_code(e) for e in inner]
    return codes[0] if all(c is not None for c in codes) else None


def _serve_tcp(sock: socket.socket, token: str | None) -> int:
    from zapcli.mcpserver import lock
    from zapcli.paths import state_dir

    _exit_on_term()
    if token is None:
        return _run_http(sock, None, None)
    lock.sweep_tokens(state_dir())  # left by servers that were killed (SIGKILL, a crash)
    path = lock.token_path(state_dir(), sock.getsockname()[1])
    held = lock.write_token(path, token)
    try:
        return _run_http(sock, token, str(path))
    finally:
        lock.remove_token(path, token, held)


def _serve_unix(path: str) -> int:
    import os

    from zapcli.mcpserver import lock

    sock = lock.listen_unix(os.path.abspath(path))
    _exit_on_term()
    try:
        return _run_http(sock, None, None)
    finally:
        try:
            os.unlink(os.path.abspath(path))
        except OSError:
            pass
