"""`zapcli completion install` and `zapcli man --install` put the packaged
files where each shell and `man` look, edit .zshrc once (never twice, never
when told not to), and say what was wrong when the shell is unknown."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from zapcli.cli import gen


def _zapcli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "ZDOTDIR", "BASH_COMPLETION"))}
    return subprocess.run([sys.executable, "-m", "zapcli", *args], capture_output=True, text=True,
                          env={**base, "HOME": str(home), **env}, timeout=60)


def test_each_shell_gets_its_file(tmp_path: Path) -> None:
    for shell, where in (("bash", ".local/share/bash-completion/completions/zapcli"),
                         ("fish", ".config/fish/completions/zapcli.fish"),
                         ("zsh", ".local/share/zsh/site-functions/_zapcli")):
        res = _zapcli(tmp_path, "completion", "install", shell, "--json")
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["path"] == str(tmp_path / where)
        assert (tmp_path / where).read_text() == gen.COMPLETIONS[shell].read_text()
    again = json.loads(_zapcli(tmp_path, "completion", "install", "zsh", "--json").stdout)
    assert again["changed"] is False and again["rc_file"] is None
    rc = (tmp_path / ".zshrc").read_text()
    assert rc.count("fpath=(") == 1 and '"$HOME/.local/share/zsh/site-functions"' in rc


def test_xdg_folders_shell_from_SHELL_and_no_rc(tmp_path: Path) -> None:
    data = tmp_path / "data"
    res = _zapcli(tmp_path, "completion", "install", "--no-rc", SHELL="/usr/bin/zsh", XDG_DATA_HOME=str(data))
    assert res.returncode == 0, res.stderr
    assert (data / "zsh" / "site-functions" / "_zapcli").is_file()
    assert not (tmp_path / ".zshrc").exists()
    assert 'fpath=("$HOME/data/zsh/site-functions" $fpath)' in res.stdout  # the lines to add
    # once .zshrc holds them, --no-rc says so instead of asking for them again (new user, round 5)
    (tmp_path / ".zshrc").write_text(res.stdout)
    again = _zapcli(tmp_path, "completion", "install", "--no-rc", SHELL="/usr/bin/zsh",
                    XDG_DATA_HOME=str(data))
    assert again.returncode == 0 and "fpath=(" not in again.stdout, again.stdout
    assert "add the lines above" not in again.stderr and "on fpath already" in again.stderr, again.stderr
    assert (tmp_path / ".zshrc").read_text() == res.stdout  # untouched
    man = _zapcli(tmp_path, "man", "--install", XDG_DATA_HOME=str(data))
    assert man.returncode == 0 and (data / "man" / "man1" / "zapcli.1").read_text() == gen.MAN_PAGE.read_text()
    # new user, round 5: it said "`man zapcli` finds it when ~/.local/bin is on PATH" — that
    # leads man to ~/.local/share/man, not to $XDG_DATA_HOME/man
    assert "~/.local/bin" not in man.stderr and f"add {data / 'man'} to MANPATH" in man.stderr, man.stderr
    if shutil.which("man"):  # what the note says is so: only MANPATH finds it
        (tmp_path / ".local" / "bin").mkdir(parents=True)
        path = f"{tmp_path / '.local' / 'bin'}:/usr/bin:/bin"
        found = subprocess.run(["man", "-w", "zapcli"], capture_output=True, text=True,
                               env={"HOME": str(tmp_path), "PATH": path}, timeout=60)
        assert found.returncode != 0, found.stdout
        found = subprocess.run(["man", "-w", "zapcli"], capture_output=True, text=True,
                               env={"HOME": str(tmp_path), "PATH": path, "MANPATH": str(data / "man")},
                               timeout=60)
        assert found.stdout.strip() == str(data / "man" / "man1" / "zapcli.1"), found


def test_an_existing_zshrc_is_kept_and_appended_to(tmp_path: Path) -> None:
    (tmp_path / ".zshrc").write_text("export EDITOR=vi")  # no newline at the end
    assert _zapcli(tmp_path, "completion", "install", "zsh").returncode == 0
    rc = (tmp_path / ".zshrc").read_text().splitlines()
    assert rc[0] == "export EDITOR=vi" and rc[-1] == "autoload -Uz compinit && compinit"


def test_an_unknown_shell_is_a_usage_error(tmp_path: Path) -> None:
    res = _zapcli(tmp_path, "completion", "install", "tcsh")
    assert res.returncode == 2 and "bash, zsh or fish" in res.stderr and "Traceback" not in res.stderr
    res = _zapcli(tmp_path, "completion", "install", SHELL="/bin/ksh")
    assert res.returncode == 2 and "name it" in res.stderr
    assert not any(tmp_path.iterdir())  # nothing written
    assert _zapcli(tmp_path, "completion", "show", "fish").stdout == gen.COMPLETIONS["fish"].read_text()
    assert _zapcli(tmp_path, "man", "--path").stdout.strip() == str(gen.MAN_PAGE)
