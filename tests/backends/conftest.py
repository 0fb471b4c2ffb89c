"""Every backend test runs under a user home of its own that must come out of
the test byte for byte as it went in (C24, issue 24 item 8): no agent CLI
writes outside its private config home — no cache, log, lock or helper
folder under HOME or the XDG folders, and the user's own config files of
every CLI untouched.

`HOME` and the XDG folders (set, inside that home, as a user may have them)
point there for the whole test: for `zap` (the CLIs zapcli starts inherit it)
and for the harnesses that start a CLI directly. A test that plays the user
and writes there itself says so with `user_home.write`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

# the user's own config of each CLI: what a CLI that ignored its private home
# would read, or rewrite (C24: ~/.claude.json truncated by parallel sessions)
USER_FILES = {
    ".claude.json": '{"numStartups": 7, "userID": "the-users-own"}\n',
    ".claude/settings.json": '{"env": {"USER_OWN": "1"}}\n',
    ".codex/config.toml": 'model = "the-users-own"\n',
    ".gemini/settings.json": '{"ui": {"theme": "the-users-own"}}\n',
    ".config/opencode/opencode.json": '{"theme": "the-users-own"}\n',
    ".qwen/settings.json": '{"ui": {"theme": "the-users-own"}}\n',
    ".pi/agent/settings.json": '{"theme": "the-users-own"}\n',
}
XDG = {"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share",
       "XDG_STATE_HOME": ".local/state", "XDG_CACHE_HOME": ".cache"}


class UserHome:
    """A user's home folder and what was in it before the test."""

    def __init__(self, path: Path):
        self.path = path
        for rel, text in USER_FILES.items():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            (path / rel).write_text(text, encoding="utf-8")
        for rel in XDG.values():
            (path / rel).mkdir(parents=True, exist_ok=True)
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, str]:
        """Every entry under the home: its kind, mode and content (or target)."""
        out = {}
        for folder, dirs, files in os.walk(self.path):
            for name in dirs + files:
                p = Path(folder) / name
                st = p.lstat()
                if p.is_symlink():
                    what = f"link -> {os.readlink(p)}"
                elif p.is_dir():
                    what = f"dir {oct(st.st_mode)}"
                else:
                    what = f"file {oct(st.st_mode)} {hashlib.sha256(p.read_bytes()).hexdigest()}"
                out[str(p.relative_to(self.path))] = what
        return out

    def write(self, rel: str, text: str) -> None:
        """The test, as the user, writes a file of theirs."""
        (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.path / rel).write_text(text, encoding="utf-8")
        self.before = self.snapshot()

    def changes(self) -> list[str]:
        after = self.snapshot()
        return sorted([f"new: {k}" for k in after.keys() - self.before.keys()]
                      + [f"gone: {k}" for k in self.before.keys() - after.keys()]
                      + [f"changed: {k}" for k in after.keys() & self.before.keys()
                         if after[k] != self.before[k]])


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = UserHome(tmp_path / "user-home")
    monkeypatch.setenv("HOME", str(home.path))
    for var, rel in XDG.items():
        monkeypatch.setenv(var, str(home.path / rel))
    yield home
    changes = home.changes()
    assert not changes, "written under the user's home:\n" + "\n".join(changes[:40])
