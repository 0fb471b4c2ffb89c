"""What crosses the wall of an agent CLI's sandbox (issue 27 item 10), with
the real bubblewrap, relay and broker: with the network off, the model's
endpoint and nothing else — relayed at its own address (an endpoint on this
machine) or through the relay's proxy, which opens `CONNECT` to that one
address only (a remote endpoint); and the spawn-time facts `endpoint` reads."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.redteam.harness import Listener
from tests.sandbox.conftest import boxed, needs_bwrap
from zapcli.backends.cli_broker import Broker
from zapcli.backends.cli_sandbox import PROXY_PORT, RELAY, Endpoint, endpoint
from zapcli.backends.registry import get
from zapcli.sandbox import placeholders
from zapcli.sandbox.policy import resolve
from zapcli.sandbox.whole import whole

INSIDE = r'''
import socket, sys, urllib.request
model, other, proxy = (int(a) for a in sys.argv[1:4])
def get(port, path):
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5).status
    except Exception as exc:
        return type(exc).__name__
def tunnel(port, path):
    s = socket.create_connection(("127.0.0.1", proxy), timeout=5)
    s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    head = s.recv(4096).split(b"\r\n")[0].decode()
    if " 200 " in head + " ":
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        head += " | " + s.recv(4096).split(b"\r\n")[0].decode()
    return head
print("DIRECT-MODEL", get(model, "/direct"))
print("DIRECT-OTHER", get(other, "/direct-other"))
print("PROXY-MODEL", tunnel(model, "/proxied"))
print("PROXY-OTHER", tunnel(other, "/proxied-other"))
'''


@needs_bwrap
def test_network_off_reaches_the_model_endpoint_and_nothing_else(tmp_path: Path) -> None:
    model, other = Listener(), Listener()
    ws, home, scratch = tmp_path / "ws", tmp_path / "home", tmp_path / "scratch"
    for d in (ws, home, scratch):
        d.mkdir()
    (ws / "inside.py").write_text(INSIDE)
    base, _ = resolve("workspace", workspace=str(ws), scratch=str(scratch), network=False)
    policy, _ = whole(base, home=str(home))
    (home / "sockets").mkdir()
    broker = Broker(home / "sockets")
    held = placeholders.hold(policy, str(tmp_path / "records"))  # as every caller of bwrap.argv
    try:
        path = broker.tcp("127.0.0.1", model.port)
        relay = [sys.executable, "-I", "-S", RELAY, "run", "--tcp", f"{model.port}={path}",
                 "--connect", f"{PROXY_PORT}=127.0.0.1:{model.port}={path}", "--"]
        res = boxed(held.policy, [*relay, sys.executable, "-I", str(ws / "inside.py"),
                                  str(model.port), str(other.port), str(PROXY_PORT)],
                    capture_output=True, text=True, timeout=60)
    finally:
        held.release()
        broker.close()
        model.close()
        other.close()
    said = dict(line.split(" ", 1) for line in res.stdout.splitlines())
    assert said["DIRECT-MODEL"] == "200" and said["DIRECT-OTHER"] != "200", res
    assert said["PROXY-MODEL"].endswith("200 OK") and " 403 " in said["PROXY-OTHER"] + " ", res
    assert sorted(h["path"] for h in model.hits) == ["/direct", "/proxied"]
    assert other.hits == []


def test_the_endpoint_network_false_lets_through() -> None:
    claude = get("claude")
    assert endpoint(claude, {}) == Endpoint("api.anthropic.com", 443, False)
    assert endpoint(claude, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8123/x"}) == Endpoint(
        "127.0.0.1", 8123, True, "/x")  # plain HTTP: its requests are read (cli_httpgate)
    assert endpoint(claude, {"ANTHROPIC_BASE_URL": "https://127.0.0.1:8123/"}) == Endpoint(
        "127.0.0.1", 8123, True, None)  # TLS: carried as bytes
    assert endpoint(get("qwen"), {"OPENAI_BASE_URL": "http://localhost:9000/v1"}).loopback  # type: ignore[union-attr]
    plain = endpoint(claude, {"ANTHROPIC_BASE_URL": "http://models.lan:8000"})
    assert isinstance(plain, str) and "https" in plain  # a remote one only through the proxy
    low = endpoint(claude, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:80"})
    assert isinstance(low, str) and "1024" in low
