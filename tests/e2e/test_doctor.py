"""`zapcli doctor` through the real CLI: every check runs even when one fails,
counts are honest, and each problem is its own line (tryout findings)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.sandbox.conftest import needs_bwrap
from zapcli.testing import ScriptedServer

SERVER = str(Path(__file__).parent.parent / "capabilities" / "fixtures" / "mcp_server.py")


@needs_bwrap  # all good includes the sandbox (make test installs bubblewrap)
def test_doctor_all_good(zap):
    srv = ScriptedServer([{"turns": [{"text": "x"}]}], models=["m1"])
    srv.start()
    try:
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="m1")
        proc = zap("doctor")
        assert proc.returncode == 0, proc.out
        heads = [line.split(":")[0] for line in proc.out.splitlines() if not line.startswith(" ")]
        assert heads[:7] + heads[8:] == [
            "ok   config", "ok   state folder", "ok   definitions", "ok   capabilities",
            "ok   mcp servers", "ok   sandbox", "ok   model shells", "ok   executors", "ok   model"]
        assert heads[7] in ("ok   backends", "WARN backends")  # which agent CLIs are installed
        zap.env["ZAPCLI_MODEL"] = "m2"
        doc = zap.json("doctor")
        model = next(c for c in doc["checks"] if c["name"] == "model")
        assert not doc["ok"] and "does not list it" in model["detail"] and "m1" in model["detail"]
    finally:
        srv.stop()


def test_doctor_reports_everything_when_config_and_mcp_are_broken(zap, tmp_path):
    cfg = tmp_path / "config" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("timout_s: 5\napproval: yolo\n")
    (zap.cwd / ".zapcli").mkdir(exist_ok=True)
    (zap.cwd / ".zapcli" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "good": {"command": sys.executable, "args": [SERVER]},
        "nocommand": {"args": []},
        "missing": {"command": str(tmp_path / "no-such-program")},
    }}))
    zap("trust", check=True)
    zap.env.update(OPENAI_BASE_URL="http://127.0.0.1:9/v1", ZAPCLI_MODEL="m")
    proc = zap("doctor", "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.err
    checks = {c["name"]: c for c in json.loads(proc.out)["checks"]}
    assert set(checks) == {"config", "workspace trust", "state folder", "definitions",
                           "capabilities", "mcp servers", "sandbox", "model shells", "backends",
                           "executors", "model"}
    assert checks["workspace trust"]["ok"] and not checks["workspace trust"]["warning"]
    config = checks["config"]
    assert not config["ok"] and len(config["problems"]) == 2
    assert "timout_s" in config["problems"][0] and "yolo" in config["problems"][1]
    mcp = checks["mcp servers"]
    assert mcp["detail"] == "3 configured, 1 started"
    assert len(mcp["problems"]) == 2 and all("\n" not in p for p in mcp["problems"])
    assert any("nocommand" in p for p in mcp["problems"])
    assert any("missing" in p and "did not start" in p for p in mcp["problems"])
    model = checks["model"]
    assert not model["ok"] and "cannot connect" in model["detail"] and "Error:" not in model["detail"]
    human = zap("doctor").out.splitlines()
    assert human[0].startswith("FAIL config: 2 problem(s)") and human[1].startswith("    ")


def test_declared_but_unavailable_capabilities_show_before_any_spawn(zap):
    """Tryout: a WebSearch without provider, a missing skill and an unconfigured
    server were only warned about at spawn time."""
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "web.yml").write_text("name: web\ndescription: d\ntools: [read, WebSearch]\n"
                                    "skills: [nope]\nmcp: {servers: [ghost]}\n")
    zap("trust", check=True)
    zap.env.pop("ZAPCLI_SEARCH_URL", None)
    row = next(a for a in zap.json("agents", "list")["agents"] if a["name"] == "web")
    assert sorted(g["name"] for g in row["grant_diagnostics"]) == ["WebSearch", "ghost", "nope"]
    listed = zap("agents", "list").out
    assert "ZAPCLI_SEARCH_URL" in listed and "skill 'nope'" in listed
    checks = {c["name"]: c for c in zap.json("doctor")["checks"]}
    caps = checks["capabilities"]  # a warning: spawn goes on without them
    assert caps["ok"] and caps["warning"] and len(caps["problems"]) == 3
    assert "WARN capabilities: 3 declared but not available" in zap("doctor").out
    assert all(p.startswith("web: ") for p in checks["capabilities"]["problems"])


def test_doctor_state_folder_on_a_full_disk(zap, small_disk):
    """#12.11: a full disk still lets an empty file be created; doctor writes
    real bytes and reads the free space, and says so."""
    zap.env["ZAPCLI_HOME"] = str(small_disk.path / "state")

    def state() -> dict:
        return next(c for c in zap.json("doctor")["checks"] if c["name"] == "state folder")

    low = state()  # a 1 MB disk: fine to write, but nearly full
    assert low["ok"] and low["warning"] and "free" in low["detail"], low
    assert "free some space" in low["problems"][0]
    small_disk.fill()
    full = state()
    assert not full["ok"] and "disk is full" in full["detail"], full
    text = zap("doctor").out
    assert "FAIL state folder: a test write failed: No space left on device" in text
    small_disk.free()
    assert state()["ok"]


def test_a_deeply_nested_mcp_json_is_one_clear_problem(zap):
    """#24.12: json's RecursionError crashed doctor (and every spawn reading it)."""
    (zap.cwd / ".zapcli").mkdir(exist_ok=True)
    (zap.cwd / ".zapcli" / "mcp.json").write_text(
        '{"mcpServers": {"x": {"command": "true", "args": ' + "[" * 5000 + "]" * 5000 + "}}}")
    zap("trust", check=True)
    proc = zap("doctor", "--json")
    assert "Traceback" not in proc.err and proc.out, proc.err[-800:]
    mcp = {c["name"]: c for c in json.loads(proc.out)["checks"]}["mcp servers"]
    assert not mcp["ok"] and any("nested too deeply" in p for p in mcp["problems"]), mcp


def test_a_server_that_writes_no_json_rpc_is_one_row_without_a_traceback(zap):
    """A new user's trusted server `sh -c 'echo hi'`: doctor's row said why,
    and the MCP SDK printed a whole pydantic traceback on stderr beside it."""
    (zap.cwd / ".zapcli").mkdir(exist_ok=True)
    (zap.cwd / ".zapcli" / "mcp.json").write_text(
        '{"mcpServers": {"lint": {"command": "sh", "args": ["-c", "echo hi; sleep 1"]}}}')
    zap("trust", check=True)
    shown = zap("doctor", timeout=120)
    assert "Traceback" not in shown.err and "ValidationError" not in shown.err, shown.err
    assert "did not start" in shown.out and "JSONRPC" in shown.out, shown.out
