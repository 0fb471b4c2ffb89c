"""Keys only where spawn put them (C34, issue 27 item 5), tested as an attacker.

- A secret is stored in a task as a reference (U+E000 NAME U+E001) that the
  runner expands. A model that types such references into a spawn (the
  `subagent` tool of `zapcli run`, `zapcli call`, `mcp serve`) must not get
  the values: no model request body and no file its child writes holds a key.
- A queued subagent's kept environment (`<state>/subagents/<id>.env`: the
  spawner's keys, until it starts) is gone as soon as it can no longer
  start: a failed `--after` dependency, a cancelled run's queued children,
  and whatever `gc` finds left over.
- Every command that can block is sealed (non-dumpable, no key in its
  environment block): the decision is one table (`zapcli.cli.lifespan`),
  checked here against every command the CLI has, and the blocking ones
  are run for real as another local user and looked at from outside.

Each test asserts the outside effect (a request body, a file, a file left in
the state folder, what /proc shows another process), never zapcli's message.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Zap
from tests.redteam.harness import Keys, _as, as_root, needs_setpriv
from zapcli.testing import ScriptedServer

REF = "\ue000{}\ue001"  # how a secret reference is written in a stored task
IDS = re.compile(r"\bsa_\d{8}_[0-9a-f]{8}\b")


def _refs(*names: str) -> str:
    return " ".join(REF.format(n) for n in names)


def _keyed(zap: Zap, keys: Keys, srv: ScriptedServer) -> None:
    zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                   OPENAI_API_KEY=keys.model, MY_TOKEN=keys.token)


def _no_key_anywhere(keys: Keys, srv: ScriptedServer, *files: Path) -> None:
    """The outside effect: no request body the model server got, and no file
    the children wrote, holds a key."""
    bodies = json.dumps(srv.requests)
    assert keys.token not in bodies and keys.model not in bodies
    for path in files:
        if path.exists():
            data = path.read_text(errors="replace")
            assert keys.token not in data and keys.model not in data, (path, data)


# ------------------------------------------------------------ references


@pytest.mark.timeout(180)
def test_a_models_spawn_through_the_run_tool_gets_no_key_from_a_reference(zap: Zap):
    """C34 through `zapcli run`'s `subagent` tool: an agent child and a shell
    child whose tasks hold references the model typed."""
    keys = Keys()
    forged = _refs("MY_TOKEN", "OPENAI_API_KEY")
    script = [
        {"match": "CHILD-c34", "turns": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "child.txt",
                                                             "content": "the task said: "}}]},
            {"text": "child done"}]},
        {"match": "PARENT-c34", "turns": [
            {"tool_calls": [
                {"name": "subagent", "arguments": {"action": "spawn", "task": f"CHILD-c34 {forged}"}},
                {"name": "subagent", "arguments": {"action": "spawn", "cli": "sh",
                                                   "task": f"echo {forged} > sh.txt"}}]},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait"}}]},
            {"text": "parent done"}]}]
    with ScriptedServer(script) as srv:
        _keyed(zap, keys, srv)
        proc = zap("run", "--approval", "full", "PARENT-c34: delegate", timeout=150)
        assert "parent done" in proc.out, proc.err
        children = [r for r in srv.requests if "CHILD-c34" in json.dumps(r["messages"][:2])]
        assert children, "the agent child never asked its model"
        _no_key_anywhere(keys, srv, zap.cwd / "sh.txt", zap.cwd / "child.txt")


@pytest.mark.timeout(120)
def test_a_spawn_through_call_gets_no_key_from_a_reference(zap: Zap):
    """C34 through `zapcli call` (the MCP server answers through the same
    handlers): a shell child echoing three references into a file, and an
    agent child whose first request carries the task."""
    keys = Keys()
    forged = _refs("MY_TOKEN", "OPENAI_API_KEY", "MY_TOKEN")
    script = [{"match": "CALL-c34", "turns": [{"text": "agent child done"}]}]
    with ScriptedServer(script) as srv:
        _keyed(zap, keys, srv)
        sh = zap("call", json.dumps({"action": "spawn", "cli": "sh", "task": f"echo {forged} > call.txt"}))
        agent = zap("call", json.dumps({"action": "spawn", "task": f"CALL-c34 {forged}"}))
        for sid in dict.fromkeys(IDS.findall(sh.out + agent.out)):
            zap("wait", sid, "--timeout", "60")
        _no_key_anywhere(keys, srv, zap.cwd / "call.txt")
        if (zap.cwd / "call.txt").exists():  # escaped, never expanded: the characters as typed
            assert (zap.cwd / "call.txt").read_text().strip() == forged


def test_a_users_own_secret_still_reaches_its_command_and_a_forged_twin_stays_text(zap: Zap):
    """The feature the references exist for keeps working: a value the user
    typed runs exactly and is never stored; a reference to the same name
    written next to it (by a model, or pasted) stays text."""
    keys = Keys()
    zap.env["MY_TOKEN"] = keys.token
    forged = REF.format("MY_TOKEN")
    sid = zap.spawn_sh(f"printf '%s|%s' {keys.token} '{forged}' > both.txt")
    assert zap("wait", sid, "--timeout", "30").returncode == 0
    assert (zap.cwd / "both.txt").read_text() == f"{keys.token}|{forged}"
    for path in zap.home.rglob("*"):
        if path.is_file():
            assert keys.token.encode() not in path.read_bytes(), path


@as_root
@needs_setpriv
@pytest.mark.timeout(120)
def test_as_another_user_a_call_spawn_gets_no_key_from_a_reference(other_user):
    keys = Keys()
    forged = _refs("MY_TOKEN", "OPENAI_API_KEY")
    with ScriptedServer([{"match": "U-c34", "turns": [{"text": "ok"}]}]) as srv:
        user = other_user(keys, srv.base_url)

        def zap_as(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(user.argv(*args), env=user.env, cwd=user.work, capture_output=True,
                                  text=True, timeout=60)
        out = zap_as("call", json.dumps({"action": "spawn", "cli": "sh",
                                         "task": f"echo {forged} > u.txt"})).stdout
        out += zap_as("call", json.dumps({"action": "spawn", "task": f"U-c34 {forged}"})).stdout
        for sid in dict.fromkeys(IDS.findall(out)):
            zap_as("wait", sid, "--timeout", "60")
        _no_key_anywhere(keys, srv, user.work / "u.txt")


@pytest.mark.timeout(180)
def test_a_shell_a_model_chose_gets_no_key_in_its_environment(zap: Zap):
    """A model may not read a key through its own bash (a scrubbed
    environment), so it must not through a shell subagent either: `env |
    base64` (no masking catches it) from the run's tool and from `call`."""
    import base64

    keys = Keys()
    dump = "env | base64 -w0 > {}"
    script = [{"match": "SHELL-env", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "cli": "sh",
                                                           "task": dump.format("run.b64")}}]},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait"}}]},
        {"text": "parent done"}]}]
    with ScriptedServer(script) as srv:
        _keyed(zap, keys, srv)
        proc = zap("run", "--approval", "full", "--no-sandbox", "SHELL-env", timeout=150)
        assert "parent done" in proc.out, proc.err
        res = zap("call", json.dumps({"action": "spawn", "cli": "sh", "task": dump.format("call.b64")}))
        for sid in IDS.findall(res.out):
            zap("wait", sid, "--timeout", "60")
    for name in ("run.b64", "call.b64"):
        seen = base64.b64decode((zap.cwd / name).read_text()).decode()
        assert "PATH=" in seen  # it did dump its environment
        assert keys.token not in seen and keys.model not in seen, name


# ------------------------------------------------------------ kept environments


def _kept(zap: Zap) -> list[str]:
    folder = zap.home / "subagents"
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".env") if folder.exists() else []


@pytest.mark.timeout(60)
def test_a_failed_after_dependency_leaves_no_kept_environment(zap: Zap):
    keys = Keys()
    zap.env["MY_TOKEN"] = keys.token
    first = zap.spawn_sh("exit 3")
    waiting = zap.spawn_sh("echo never", "--after", first)
    assert zap.wait_status(first) == "failed"
    assert zap.wait_status(waiting) == "failed"  # its dependency failed: it can never start
    assert _kept(zap) == []


@pytest.mark.timeout(120)
def test_a_cancelled_runs_queued_children_leave_no_kept_environment(zap: Zap):
    """A run whose children wait behind the concurrency cap ends (its
    timeout): the queued ones will never start, so their keys go."""
    keys = Keys()
    spawns = [{"name": "subagent", "arguments": {"action": "spawn", "cli": "sh",
                                                 "task": f"sleep 60 # {i}"}} for i in range(3)]
    script = [{"match": "QUEUE-run", "turns": [{"tool_calls": spawns},
                                               {"text": "spawned", "delay_s": 0}]}]
    with ScriptedServer(script) as srv:
        _keyed(zap, keys, srv)
        zap.env["ZAPCLI_MAX_CONCURRENT"] = "1"
        proc = zap("run", "--approval", "full", "--timeout", "8", "QUEUE-run", timeout=90)
        assert proc.returncode != 0 or "spawned" in proc.out
        listed = zap.json("list", "--all")["subagents"]
        assert len(listed) == 3, listed
        assert all(s["status"] not in ("queued", "running") for s in listed), listed
    assert _kept(zap) == []


def test_gc_removes_kept_environments_nothing_can_start_with(zap: Zap):
    """What an earlier version left (an ended subagent's `.env`, one whose
    trail is gone) goes at the next `gc`, even while something runs."""
    keys = Keys()
    ended = zap.spawn_sh("true")
    assert zap.wait_status(ended) == "completed"
    running = zap.spawn_sh("sleep 30")
    folder = zap.home / "subagents"
    leftover = {"MY_TOKEN": keys.token}
    for name in (f"{ended}.env", "sa_20200101_0badc0de.env"):
        (folder / name).write_text(json.dumps(leftover))
        os.chmod(folder / name, 0o600)
        old = time.time() - 3600
        os.utime(folder / name, (old, old))
    zap("gc")
    assert _kept(zap) == []
    zap("kill", running)


# ------------------------------------------------------------ sealing


def _commands() -> dict[str, dict]:
    from zapcli.cli.gen import argspec

    return argspec(with_groups=True)


# Every form of a command that waits: for its subagents, a person, a client,
# a lock, the network or another program. Each must be sealed.
BLOCKING = [
    ["wait", "ID"], ["poll", "ID"], ["poll", "--wait-secs", "30", "ID"], ["list", "--watch"],
    ["list", "-w"], ["list", "-lw"], ["output", "--follow", "ID"], ["output", "-f", "ID"],
    ["kill", "ID"], ["kill", "--grace", "30", "ID"], ["run", "TASK"], ["mcp", "serve"],
    ["call", '{"action": "wait"}'], ["call", '{"action": "poll", "ids": ["ID"]}'], ["call", "-"],
    ["call"], ["call", '{"action": "attempts", "id": "ID", "check": "make test"}'],
    ["doctor"], ["board", "claim", "--wait", "30"], ["board", "claim", "--wait=30"],
    ["attempts", "--check", "make test", "ID"], ["trace", "export"], ["gc"], ["merge", "ID"],
    ["pick", "ID"], ["continue", "ID", "more"], ["worktree", "rm", "ID"]]
# The only forms that stay unsealed: the measured hot path, answered at once.
SHORT = [["spawn", "--cli", "sh", "--", "sleep 1 --watch"], ["poll", "--no-wait", "ID"],
         ["list"], ["list", "--all", "--json", "-l"], ["session"], ["tool-schema"],
         ["call", '{"action": "spawn", "task": "x"}'], ["call", '{"action": "list"}'],
         ["board", "claim"], ["--version"], ["--help"], []]


def test_every_command_is_sealed_unless_declared_short():
    """Enumerates the CLI: each command (and each of its options) is sealed
    unless it is one of the few short forms; a new command is sealed without
    anyone remembering to. The blocking forms named above are all sealed."""
    from zapcli.cli import lifespan

    unsealed = []
    for name, entry in _commands().items():
        words = name.split()
        if lifespan.seals([*words, "ID"]) is False and words[0] not in lifespan.SHORT_COMMANDS:
            unsealed.append(name)
        for option, (_dest, kind, _multiple) in entry["options"].items():
            argv = [*words, option, *([] if kind == "flag" else ["1"]), "ID"]
            if not lifespan.seals(argv) and words[0] not in lifespan.SHORT_COMMANDS:
                unsealed.append(" ".join(argv))
    assert unsealed == []
    assert [a for a in BLOCKING if not lifespan.seals(a)] == []
    assert [a for a in SHORT if lifespan.seals(a)] == []
    assert set(lifespan.SHORT_COMMANDS) == {"spawn", "poll", "list", "session", "tool-schema",
                                            "call", "board"}  # a new short command is a decision


def test_every_module_a_program_starts_seals_itself_or_says_why_not():
    """The programs other than the CLI that zapcli or an agent CLI start
    (`python -m zapcli.…`): each seals (or guards) itself first thing."""
    import re

    from tests.conftest import REPO

    exempt = {"zapcli/cli/gen.py": "a developer's generator, run by make",
              "zapcli/demo.py": "the demo, started by a person",
              "zapcli/selfexec.py": "not a program: the argv that starts the others (its "
                                    "`__main__` is runpy's run name for them)",
              "zapcli/testing/scripted_server.py": "a test model server",
              "zapcli/sandbox/inner.py": "the sandbox helper, inside the sandbox's own pid namespace",
              "zapcli/sandbox/relay.py": "an agent CLI's relay, inside its sandbox with only the "
                                         "environment the CLI holds too (its own key)"}
    missing = []
    for path in sorted((REPO / "zapcli").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        text = path.read_text()
        if not re.search(r"__name__ == [\"']__main__[\"']", text) or rel in exempt \
                or rel.endswith("__main__.py"):
            continue
        if not re.search(r"keyguard\.(seal|guard)\(\)", text):
            missing.append(rel)
    assert missing == []


def _blocked_forms(sid_running: str, sid_stubborn: str, silent: str
                   ) -> list[tuple[str, list[str], dict[str, str]]]:
    """(name, argv, environment changes) of commands that block, each given
    what makes it wait; `silent`: a model URL that accepts and never answers."""
    forms = [("wait", ["wait", sid_running]),
            ("poll", ["poll", "--wait-secs", "30", sid_running]),
            ("output --follow", ["output", "--follow", sid_running]),
            ("kill --grace", ["kill", "--grace", "60", sid_stubborn]),
            ("board claim --wait", ["board", "claim", "--wait", "60"]),
            ("call wait", ["call", json.dumps({"action": "wait", "ids": [sid_running],
                                               "timeout": 60})]),
            ("mcp serve", ["mcp", "serve"]),
            ("run", ["run", "SLOW-seal"])]
    return [(name, argv, {}) for name, argv in forms] + [
        ("doctor", ["doctor"], {"OPENAI_BASE_URL": silent})]


def _unclaimable_board(zap) -> None:
    """A board whose one open task waits on one the caller holds: `claim
    --wait` waits (an empty board answers at once)."""
    zap("board", "add", "first")
    zap("board", "add", "second", "--after", "t1")
    zap("board", "claim")


def _looked_at_from_outside(pid: int, uid: int, value: str) -> tuple[bool, bool]:
    """(whether another process of the same user can read its environment,
    whether its environment block shows `value`) — as a tool would see it."""
    same_user = subprocess.run([*_as(uid), "cat", f"/proc/{pid}/environ"], capture_output=True,
                               timeout=10)
    with open(f"/proc/{pid}/environ", "rb") as fh:  # as root: what the block holds
        block = fh.read()
    return same_user.returncode == 0, value.encode() in block


@as_root
@needs_setpriv
@pytest.mark.timeout(300)
def test_blocking_commands_are_sealed_as_another_user_sees_them(other_user):
    """Each blocking command, run as another local user with a key in its
    environment, while it waits: a process of that same user cannot read its
    /proc environ (it is non-dumpable), and its block holds no key."""
    keys = Keys()
    script = [{"match": "SLOW-seal", "turns": [{"text": "slow", "delay_s": 60}]}]
    with ScriptedServer(script) as srv:
        user = other_user(keys, srv.base_url)
        silent = socket.socket()  # doctor's probe of the model waits on one that never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)

        def zap_as(*args: str) -> str:
            return subprocess.run(user.argv(*args), env=user.env, cwd=user.work, capture_output=True,
                                  text=True, timeout=60).stdout.strip()
        running = zap_as("spawn", "--cli", "sh", "--timeout", "200", "--", "sleep 120")
        stubborn = zap_as("spawn", "--cli", "sh", "--timeout", "200", "--",
                          "trap '' TERM; sleep 120 & wait; sleep 120")
        assert running.startswith("sa_") and stubborn.startswith("sa_"), (running, stubborn)
        _unclaimable_board(zap_as)
        failures = []
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        # All the forms at once, each looked at once it has sealed itself (a
        # slow start is not what this measures) and again at least 2 s after
        # its start, while it still waits (it never ends on its own).
        procs = []
        try:
            for name, argv, env in _blocked_forms(running, stubborn, url):
                procs.append((name, time.monotonic(), subprocess.Popen(
                    user.argv(*argv), env={**user.env, **env}, cwd=user.work,
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
            for _, _, proc in procs:  # sealed (or ended): the look below says which
                end = time.monotonic() + 60
                while (proc.poll() is None and time.monotonic() < end and
                       _looked_at_from_outside(proc.pid, user.uid, keys.token) != (False, False)):
                    time.sleep(0.2)
            for name, started, proc in procs:
                time.sleep(max(0.0, started + 2.0 - time.monotonic()))
                assert proc.poll() is None, f"{name} ended instead of waiting"
                readable, shows_key = _looked_at_from_outside(proc.pid, user.uid, keys.token)
                if readable or shows_key:
                    failures.append((name, "readable" if readable else "", "key" if shows_key else ""))
        finally:
            for _, _, proc in procs:
                proc.kill()
                proc.wait()
        silent.close()
        assert failures == [], failures


@pytest.mark.timeout(60)
def test_board_claim_wait_is_sealed_as_the_same_user_sees_it(zap: Zap):
    """The field case, as root: `board claim --wait` (it waits for a task)
    keeps no key in the block /proc/<pid>/environ shows."""
    keys = Keys()
    zap.env["MY_TOKEN"] = keys.token
    _unclaimable_board(lambda *a: zap(*a, check=True))
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "board", "claim", "--wait", "60"],
                            env=zap.env, cwd=zap.cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        time.sleep(2.0)
        assert proc.poll() is None
        with open(f"/proc/{proc.pid}/environ", "rb") as fh:
            block = fh.read()
        assert b"MY_TOKEN=" in block and keys.token.encode() not in block
    finally:
        proc.kill()
        proc.wait()


@as_root
@needs_setpriv
@pytest.mark.timeout(120)
def test_a_shell_runner_is_non_dumpable_as_another_user_sees_it(other_user):
    """A `--cli sh` subagent's runner, started by another local user with a
    key in its environment, while its command runs: a process of that same
    user cannot read the runner's /proc environ or mem (the dump flag is off,
    now set through `_ctypes` alone), yet it can read its command's (a
    dumpable process of its own: the look itself works)."""
    keys = Keys()
    user = other_user(keys, "http://127.0.0.1:9/v1")
    sid = subprocess.run(user.argv("spawn", "--cli", "sh", "--timeout", "60", "--", "sleep 30"),
                         env=user.env, cwd=user.work, capture_output=True, text=True,
                         timeout=60).stdout.strip()
    assert sid.startswith("sa_"), sid
    trail = Path(user.env["ZAPCLI_HOME"]) / "subagents" / f"{sid}.jsonl"
    deadline = time.monotonic() + 30
    runner = None
    while runner is None and time.monotonic() < deadline:
        records = [json.loads(line) for line in trail.read_text().splitlines() if line.strip()]
        runner = next((r["pid"] for r in records if r.get("type") == "start"), None)
        time.sleep(0.05)
    assert runner is not None, "its runner never started"
    import psutil

    def sleeping() -> psutil.Process | None:
        return next((p for p in psutil.Process(runner).children(recursive=True)
                     if p.name() == "sleep"), None)
    while sleeping() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    work = sleeping()
    assert work is not None, "its command is not running"
    for name in ("environ", "mem"):
        look = subprocess.run([*_as(user.uid), "head", "-c", "1", f"/proc/{runner}/{name}"],
                              capture_output=True, timeout=10)
        assert look.returncode != 0, f"the runner's /proc {name} was readable by its own user"
    mine = subprocess.run([*_as(user.uid), "head", "-c", "1", f"/proc/{work.pid}/environ"],
                          capture_output=True, timeout=10)
    assert mine.returncode == 0, mine.stderr
    subprocess.run(user.argv("kill", sid), env=user.env, cwd=user.work, capture_output=True,
                   timeout=60)
