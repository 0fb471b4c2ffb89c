"""One attacker's zapcli, as root (the test's own user) or as another local
user (played with setpriv, tests.redteam.harness.User): the same calls
either way, so each attack runs as both where the class allows.

`Actor(...)(*args)` runs `zapcli ARGS` in the actor's workspace with its
state, config and keys; `approve_while` answers its subagents' approval
requests the way a person at the terminal would (bash yes, anything else
no) while a test waits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from tests.conftest import trail_records, wait_until
from tests.redteam.harness import User, _as


class Actor:
    """zapcli as one local user. `uid` None: the test's own (root)."""

    def __init__(self, env: dict[str, str], work: Path, home: Path, config: Path,
                 python: str = sys.executable, uid: int | None = None,
                 pythonpath: str | None = None):
        self.env, self.work, self.home, self.config = env, work, home, config
        self.python, self.uid = python, uid
        if pythonpath:
            self.env["PYTHONPATH"] = pythonpath

    @classmethod
    def root(cls, zap, **env: str) -> Actor:
        zap.env.update(env)
        return cls(zap.env, zap.cwd, zap.home, Path(zap.env["ZAPCLI_CONFIG_HOME"]))

    @classmethod
    def user(cls, user: User, **env: str) -> Actor:
        user.env.update(env)
        return cls(user.env, user.work, user.home / "state", user.home / "config",
                   python=user.python, uid=user.uid)

    @property
    def name(self) -> str:
        return "root" if self.uid is None else f"uid {self.uid}"

    def prefix(self) -> list[str]:
        return [] if self.uid is None else _as(self.uid)

    def __call__(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
        proc = subprocess.run([*self.prefix(), self.python, "-m", "zapcli", *args],
                              env=self.env, cwd=self.work, capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        proc.out = proc.stdout.decode("utf-8", "replace")  # type: ignore[attr-defined]
        proc.err = proc.stderr.decode("utf-8", "replace")  # type: ignore[attr-defined]
        return proc

    def run(self, argv: list[str], cwd: Path | None = None, **kw) -> subprocess.CompletedProcess:
        """Any program as this user (git status, a shell)."""
        return subprocess.run([*self.prefix(), *argv], env=self.env, cwd=cwd or self.work,
                              capture_output=True, text=True, timeout=60, **kw)

    def outside(self) -> Path:
        """A folder outside the workspace this user could write to: an attack
        that lands a file here won (`harness.outside` is root's alone)."""
        out = self.work.parent / "OUT"
        out.mkdir(exist_ok=True)
        os.chmod(out, 0o777)
        return out

    def own(self, *paths: Path) -> None:
        """Hand files the test made (as root) to this user."""
        if self.uid is None:
            return
        for path in paths:
            for p in [path, *(path.rglob("*") if path.is_dir() and not path.is_symlink() else [])]:
                os.chown(p, self.uid, self.uid, follow_symlinks=False)

    def spawn(self, *args: str) -> str:
        done = self("spawn", *args)
        assert done.returncode == 0, (self.name, done.err)
        sid = done.out.strip().splitlines()[-1]
        assert sid.startswith("sa_"), done.out
        return sid

    def agent_writes(self, path: str, content: str) -> str:
        """An unattended built-in agent (`workspace` mode) whose scripted model
        writes `content` at `path` with its write tool; it completed: its id."""
        from zapcli.testing import ScriptedServer

        script = [{"match": "tidy", "turns": [
            {"tool_calls": [{"name": "write", "arguments": {"path": path, "content": content}}]},
            {"text": "tidied"}]}]
        with ScriptedServer(script) as srv:
            self.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                            OPENAI_API_KEY="sk-zaptest-x-0123456789")
            sid = self.spawn("--approval", "workspace", "--unattended", "tidy the repo")
            assert self.wait(sid) == "completed", self("output", sid).out
        return sid

    def trail(self, sid: str) -> Path:
        return self.home / "subagents" / f"{sid}.jsonl"

    def status(self, sid: str) -> str:
        done = self("poll", "--no-wait", "--json", sid)
        return json.loads(done.stdout)["subagents"][0]["status"]

    def wait(self, sid: str, timeout: float = 120) -> str:
        self("wait", sid, "--timeout", str(int(timeout)), timeout=timeout + 30)
        return self.status(sid)

    def approve_while(self, sid: str, allow: tuple[str, ...] = ("bash",)) -> threading.Event:
        """Until the returned event is set: approve each pending request of
        `sid` for a tool in `allow`, deny the others (a person saying no)."""
        done = threading.Event()

        def answer() -> None:
            seen: set[str] = set()
            while not done.is_set():
                try:
                    records = trail_records(self.trail(sid))
                except OSError:
                    records = []
                decided = {r.get("req_id") for r in records if r.get("type") == "approval_decision"}
                for rec in records:
                    req = rec.get("req_id")
                    if rec.get("type") != "approval_request" or req in decided or req in seen:
                        continue
                    seen.add(req)
                    verb = "approve" if rec.get("tool") in allow else "deny"
                    self(verb, sid, req)
                done.wait(0.1)

        threading.Thread(target=answer, daemon=True).start()
        return done

    def wait_for_request(self, sid: str, timeout: float = 60) -> dict:
        return wait_until(lambda: next((r for r in trail_records(self.trail(sid))
                                        if r.get("type") == "approval_request"), None),
                          timeout)  # type: ignore[return-value]
