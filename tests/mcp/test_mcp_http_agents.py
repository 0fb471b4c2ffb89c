"""`zapcli mcp serve --http` with the SDK client over streamable HTTP, and the
definition tools (agents, agents_save, agents_delete: issue 13's MCP part),
whose files must be what `zapcli agents save` writes."""

from __future__ import annotations

import socket
import subprocess
import sys

from mcp import Client

from tests.conftest import wait_until
from tests.mcp.conftest import http_client, run, text, token_of

GOOD = "name: doc-reader\ndescription: Reads the docs.\ntools: [read, grep]\nprompt: Read the docs.\n"
TYPO = GOOD.replace("tools:", "toolz:")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_http(zap, port: int) -> subprocess.Popen:
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "mcp", "serve", "--http", str(port)],
                            env=env, cwd=zap.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def up() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    wait_until(up, 30)
    return proc


def test_http_serves_the_same_tools_on_localhost(zap):
    port = _port()
    proc = _serve_http(zap, port)
    url = f"http://127.0.0.1:{port}/mcp"
    token = token_of(zap, port)
    try:
        async def go(mode):
            async with http_client(url, token, mode=mode) as c:
                names = [t.name for t in (await c.list_tools()).tools]
                sid = (await c.call_tool("spawn", {"task": "echo via-http", "cli": "sh"})).structured_content["id"]
                done = await c.call_tool("wait", {"ids": [sid], "timeout": 30})
                listed = await c.call_tool("list", {})
                return names, sid, done, listed

        names, sid, done, listed = run(go, "auto")
        assert "spawn" in names and "agents_delete" in names
        assert "via-http" in text(done) and sid[-8:] in text(listed)
        _, legacy_sid, _, legacy_listed = run(go, "legacy")  # a session id: its own session
        assert legacy_sid[-8:] in text(legacy_listed) and sid[-8:] not in text(legacy_listed)
        # bound to 127.0.0.1 by default: nothing answers on the other addresses
        other = socket.gethostbyname(socket.gethostname())
        if not other.startswith("127."):
            with socket.socket() as s:
                assert s.connect_ex((other, port)) != 0
    finally:
        proc.terminate()
        proc.wait(10)


def test_definition_tools_write_what_the_cli_writes(zap, tmp_path):
    from tests.mcp.conftest import server_params

    target = zap.cwd / ".zapcli" / "subagents" / "doc-reader.yml"
    written: list[bytes] = []

    async def go():
        async with Client(server_params(zap)) as c:
            typo = await c.call_tool("agents_save", {"yaml": TYPO})
            saved = await c.call_tool("agents_save", {"yaml": GOOD, "scope": "workspace"})
            written.append(target.read_bytes())
            listed = await c.call_tool("agents", {})
            shown = await c.call_tool("agents", {"name": "doc-reader"})
            builtin = await c.call_tool("agents_save", {"yaml": GOOD.replace("doc-reader", "explorer")})
            keep = await c.call_tool("agents_delete", {"name": "explorer"})
            gone = await c.call_tool("agents_delete", {"name": "doc-reader"})
            return typo, saved, listed, shown, builtin, keep, gone

    typo, saved, listed, shown, builtin, keep, gone = run(go)
    assert typo.is_error and "did you mean 'tools'" in text(typo)
    assert not saved.is_error and str(target) in text(saved)
    assert "doc-reader" in text(listed) and "tools: read, grep" in text(shown)
    assert builtin.is_error and "name of a built-in definition" in text(builtin)
    assert keep.is_error and "read-only" in text(keep)
    assert not gone.is_error and not target.exists()
    # the CLI writes the same file from the same text
    (tmp_path / "def.yml").write_text(GOOD)
    zap("agents", "save", str(tmp_path / "def.yml"), check=True)
    assert target.read_bytes() == written[0]
