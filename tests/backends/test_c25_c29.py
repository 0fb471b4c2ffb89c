"""Field cases C25 and C29 (CASES-3) for every backend, with the real pinned
CLIs against the scripted servers.

C25: a trust gate never stops a headless subagent in a tree zapcli created.
Each backend works in a fresh `--worktree` with stdin closed (or its task
only, then EOF): a `cat` in its work ends at once instead of waiting on a
prompt. Gemini's folder trust (on by default since 0.61; a system settings
file turns it on here in any case) exits 55 in a folder without a trust
entry: zapcli passes `--skip-trust` in its own trees (and in a folder the
user has not marked DO_NOT_TRUST); in one the user distrusts, the subagent is
`failed` within seconds, naming folder trust.

C29: an empty final report is never plain success: for the built-in agent
and every agent CLI it is `failed`, the reason starting "no report" (so
`wait` exits 3), its tokens still settled. `sh` has no report (its output is
its result): an empty output is no failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.backends import clitest as ct
from tests.conftest import wait_until
from tests.parallel.conftest import repo  # noqa: F401 - the fixture
from zapcli.testing.server import ScriptedServer

CLIS = ("claude", "codex", "gemini", "opencode", "qwen", "pi")
AGENTS = ("zapcli", *CLIS)
CAT = {"claude": ("Bash", {"command": "cat; echo stdin-closed; pwd", "description": "read stdin"}),
       "codex": ("exec_command", {"cmd": "cat; echo stdin-closed; pwd"}),
       "gemini": ("run_shell_command", {"command": "cat; echo stdin-closed; pwd"}),
       "opencode": ("bash", {"command": "cat; echo stdin-closed; pwd", "description": "read stdin"}),
       "pi": ("bash", {"command": "cat; echo stdin-closed; pwd"}),
       # qwen's shell tool reads a pty (node-pty), whose last output a command that exits at
       # once can lose on Linux (microsoft/node-pty#726: "Output: (empty)", one run in ~5 here);
       # the command stays a second after it printed. What is asserted is unchanged.
       "qwen": ("run_shell_command", {"command": "cat; echo stdin-closed; pwd; sleep 1",
                                      "is_background": False, "description": "read stdin"}),
       "zapcli": ("bash", {"command": "cat; echo stdin-closed; pwd"})}
PROTOCOL = {**ct.PROTOCOL, "zapcli": "chat"}
USAGE = {"prompt_tokens": 120, "completion_tokens": 0}


def _script(cli: str) -> list[dict]:
    name, args = CAT[cli]
    tool = {"tool_calls": [{"name": name, "arguments": args, **({"id": "c1"} if cli == "codex" else {})}]}
    return [
        {"match": f"C25-{cli.upper()}", "turns": [dict(tool), {"text": "trusted tree done"}]},
        # C29: a first turn that says something and calls a tool, then a last
        # turn with no text at all
        {"match": f"C29-{cli.upper()}", "turns": [
            {"text": "Let me look first.", **tool, "usage": USAGE},
            *[{"text": "", "usage": USAGE}] * 10]},  # (claude, qwen ask again after an empty answer)
        {"match": "C29-PARENT", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {
                "action": "spawn", "task": "C29-CHILD answer"}}]},
            {"delay_s": 6, "tool_calls": [{"name": "subagent", "arguments": {"action": "list"}}]},
            {"text": "parent done"}]},
        {"match": "C29-CHILD", "turns": [{"text": "", "usage": USAGE}]},
    ]


@pytest.fixture(scope="module")
def servers():
    srvs = {cli: ScriptedServer(_script(cli), protocol=PROTOCOL[cli]) for cli in AGENTS}
    for s in srvs.values():
        s.start()
    yield srvs
    for s in srvs.values():
        s.stop()


def _env(zap, servers, cli: str, tmp_path) -> dict[str, str]:
    if cli == "zapcli":
        return {"OPENAI_BASE_URL": servers[cli].base_url, "OPENAI_API_KEY": "sk-test-0123456789",
                "ZAPCLI_MODEL": "scripted"}
    ct.configure(zap, cli)
    return ct.cli_env(cli, servers[cli])


def _spawn(zap, cli: str, task: str, env: dict[str, str], *extra: str) -> str:
    if cli == "zapcli":
        proc = zap("spawn", "--approval", "full", *extra, "--", task, env=env)
        assert proc.returncode == 0, proc.err
        return proc.out.strip()
    return ct.spawn(zap, cli, task, env, "--approval", "full", *extra)


def _trust_on(tmp_path) -> str:
    """A Gemini CLI system settings file that turns folder trust on."""
    path = tmp_path / "gemini-system-settings.json"
    path.write_text(json.dumps({"security": {"folderTrust": {"enabled": True}}}))
    return str(path)


@pytest.mark.parametrize("cli", [*AGENTS, "sh"])
def test_c25_each_backend_works_in_a_fresh_tree_with_stdin_closed(zap, repo, servers,  # noqa: F811
                                                                  tmp_path, cli):
    if cli == "sh":
        sid = zap.spawn_sh("cat; echo stdin-closed; pwd", "--worktree")
        assert zap("wait", sid, "--timeout", "30").returncode == 0
        tree = ct.records(zap, sid, "spawn")[0]["worktree"]["path"]
        assert "stdin-closed" in zap("output", sid).out and tree in zap("output", sid).out
        return
    env = _env(zap, servers, cli, tmp_path)
    if cli == "gemini":  # its trust gate on: the tree zapcli made passes it
        env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = _trust_on(tmp_path)
    sid = _spawn(zap, cli, f"C25-{cli.upper()} work here", env, "--worktree", "--timeout", "120")
    assert zap("wait", sid, "--timeout", "150").returncode == 0, ct.dump(zap, sid)
    tree = ct.records(zap, sid, "spawn")[0]["worktree"]["path"]
    results = " ".join(r["content"] for r in ct.records(zap, sid, "tool_result"))
    assert "stdin-closed" in results and tree in results, ct.dump(zap, sid)  # in its own tree
    assert ct.records(zap, sid, "report")[-1]["text"].strip() == "trusted tree done"


def test_c25_gemini_exit_55_in_a_distrusted_folder_is_failed_at_once(zap, servers, tmp_path,
                                                                    user_home):
    env = _env(zap, servers, "gemini", tmp_path)
    env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = _trust_on(tmp_path)
    # the user's own gemini said: not this folder
    user_home.write(".gemini/trustedFolders.json", json.dumps({str(zap.cwd): "DO_NOT_TRUST"}))
    t0 = time.monotonic()
    sid = _spawn(zap, "gemini", "C25-GEMINI not trusted here", env, "--timeout", "300")
    assert zap("wait", sid, "--timeout", "120").returncode == 3, ct.dump(zap, sid)
    assert time.monotonic() - t0 < 90  # seconds, never the 300 s deadline
    view = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert view["status"] == "failed" and view["exit_code"] == 55, view
    assert "folder trust" in view["reason"] and "--worktree" in view["reason"], view


@pytest.mark.parametrize("cli", AGENTS)
def test_c29_an_empty_final_report_is_failed_no_report_and_usage_settled(zap, servers, tmp_path,
                                                                         cli):
    env = _env(zap, servers, cli, tmp_path)
    sid = _spawn(zap, cli, f"C29-{cli.upper()} review it", env, "--timeout", "120")
    assert zap("wait", sid, "--timeout", "150", env=env).returncode == 3, ct.dump(zap, sid)
    view = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert view["status"] == "failed" and view["reason"].startswith("no report"), view
    assert "Let me look first." not in (view.get("report") or "")  # a preamble is no report
    rows = ct.usage_rows(zap, sid)  # the tokens it used are settled, once
    assert len(rows) == 1 and rows[0]["input_tokens"] > 0, rows


def test_c29_sh_has_no_report_and_empty_output_is_no_failure(zap):
    sid = zap.spawn_sh("true")
    assert zap("wait", sid, "--timeout", "30").returncode == 0
    assert zap.status(sid) == "completed"


def test_c29_the_parents_notice_says_no_report(zap, servers, tmp_path):
    env = _env(zap, servers, "zapcli", tmp_path)
    proc = subprocess.run([sys.executable, "-m", "zapcli", "run", "--approval", "full",
                           "C29-PARENT delegate"], env={**zap.env, **env}, cwd=zap.cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    asked = [r for r in servers["zapcli"].requests if "C29-PARENT" in json.dumps(r)]
    said = json.dumps(asked[-1]["messages"])
    assert "finished: failed" in said and "no report" in said, said[-2000:]
    child = wait_until(lambda: [s for p in zap.json("usage", "--all")["sessions"]
                                for s in p["subagents"]], 10)
    assert child and child[0]["input_tokens"] == 120  # settled into the run's ledger
