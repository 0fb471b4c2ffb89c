"""`zapcli mcp serve`: parse the address, hand over to `zapcli.mcpserver`.

Imports `zapcli.mcpserver.server` (and so `mcp`) only when serving.
"""

from __future__ import annotations

from zapcli.errors import UsageError, param


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


def serve(http: str | None = None) -> int:
    import anyio

    if http is None:
        from zapcli.mcpserver.sdk import stdio_server_module

        anyio.run(stdio_server_module().serve_stdio)  # the SDK's HTTP half left out
    else:
        from zapcli.mcpserver import server

        sock = server.listen(*address(http))  # a port in use: one error line, exit 1
        anyio.run(server.serve_http, sock)
    return 0
