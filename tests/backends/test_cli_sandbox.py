"""Issue 18 item 1, for agent CLIs: zapcli's sandbox policy mapped onto a
CLI's own sandbox where it has one (codex), and a `sandbox` diagnostic at
every start saying what is not enforced. The codex case runs the REAL codex
against the scripted Responses server: its bubblewrap sandbox lets a
command write in a declared writable root and refuses one outside."""

from __future__ import annotations

from pathlib import Path

from tests.backends.test_codex_adapter import of, request, run_codex
from zapcli.backends import registry
from zapcli.backends.clis.codex import CodexBackend
from zapcli.testing import ScriptedServer

WRITE = "python3 -c \"open('{path}', 'w').write('x')\" && echo wrote-{name}"


def test_codex_sandbox_writes_only_in_the_declared_roots(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    script = [{"match": "SANDBOXED", "turns": [
        {"tool_calls": [{"name": "exec_command", "id": "c1", "arguments": {
            "cmd": WRITE.format(path="extra/in.txt", name="in")}}]},
        {"tool_calls": [{"name": "exec_command", "id": "c2", "arguments": {
            "cmd": WRITE.format(path=outside / "out.txt", name="out")}}]},
        {"text": "sandbox tried"}]}]
    with ScriptedServer(script, protocol="responses") as srv:
        req = request(tmp_path, srv, "SANDBOXED go", approval="workspace",
                      sandbox={"network": False, "writable": ["extra"]})
        (Path(req.workspace) / "extra").mkdir()
        records, outcome, *_ = run_codex(req)
    assert outcome.report == "sandbox tried", records
    assert (Path(req.workspace) / "extra" / "in.txt").exists()
    assert not (outside / "out.txt").exists()  # codex's sandbox refused it
    inside, *out = of(records, "tool_result")
    assert inside["ok"] and "wrote-in" in inside["content"]
    # what codex sent its model for the refused command: the sandbox's own error. Codex
    # 0.169's --json stream leaves out a command its sandbox denied unless the output holds
    # more than the denial (e.g. a login shell's noise), so the trail may lack that call
    refused = [item["output"] for body in srv.requests for item in body.get("input", [])
               if item.get("type") == "function_call_output" and item.get("call_id") == "c2"]
    assert refused and "Read-only file system" in refused[-1], srv.requests[-1]
    assert all(not o["ok"] for o in out), out
    config = (req.config_home / "config.toml").read_text()
    assert "network_access = false" in config and "extra" in config
    said = CodexBackend().sandbox_diagnostics(req)[0]["message"]
    assert "writes only under the workspace" in said and "network off" in said
    assert "pid namespace" in said  # what codex does not enforce


def test_every_cli_says_what_of_the_sandbox_is_not_enforced(tmp_path: Path):
    for name in ("claude", "gemini", "opencode", "qwen", "pi"):
        req = request(tmp_path, None, "x", sandbox={"network": False, "writable": ["out"]})
        said = " ".join(d["message"] for d in registry.get(name).sandbox_diagnostics(req))
        assert "zapcli's sandbox does not wrap them" in said and "is not enforced" in said, name
    full = request(tmp_path, None, "x", approval="full")
    assert "unsandboxed" in CodexBackend().sandbox_diagnostics(full)[0]["message"]
