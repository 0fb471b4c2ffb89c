"""The picture of `zapcli top` for the docs site — made, never drawn.

`make(folder)` starts a small offline fleet against zapcli's scripted model
server (a fixer whose model asks to run a command and waits for approval,
an explorer reading, shell builds running, one queued behind another, one
completed, one failed, a shell whose work spawned two more), runs the real
`zapcli top` in a detached tmux session of a fixed size, waits for its
first full frame (the request on screen), captures it with
`tmux capture-pane -e -p` (the text with its colours), and renders that
with rich (`Console(record=True)`, `export_svg`): `top.svg` in `folder`.
`shoot` (the docs build's Chromium photographer, `pictures._shoot`) makes
`top.png` from it as well. Everything it started is ended before it returns.

The docs build (docs/_hooks/pictures.py, `PICTURES["top.png"]`) calls it
with its Chromium photographer; pages show `../images/top.png`.

By hand: `python docs/_hooks/top_screen.py OUTDIR` (needs tmux; Chromium for
the PNG). Raises `Unavailable` naming what this machine lacks.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

SIZE = (132, 38)  # the terminal's columns and rows
SESSION = "docs-top"
COMMAND = "pytest -q tests/api && git push origin HEAD:refs/heads/fix/login-timeout"


class Unavailable(Exception):
    """What this machine lacks to make the picture."""


def _zapcli(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 60) -> str:
    res = subprocess.run([sys.executable, "-m", "zapcli", *args], env=env, cwd=cwd, text=True,
                         capture_output=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"zapcli {' '.join(args)} failed ({res.returncode}): {res.stderr}")
    return res.stdout.strip()


def _script() -> list[dict]:
    reads = [{"tool_calls": [{"name": "grep", "arguments": {"pattern": "timeout", "path": "."}}],
              "delay_s": 1.0, "usage": {"prompt_tokens": 2100, "completion_tokens": 140}},
             {"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}], "delay_s": 60,
              "usage": {"prompt_tokens": 3800, "completion_tokens": 260}}]
    return [
        {"match": "login times out", "turns": [
            {"text": "Reproduce first.", "tool_calls": [{"name": "bash", "arguments": {
                "command": COMMAND}}], "delay_s": 0.5,
             "usage": {"prompt_tokens": 5200, "completion_tokens": 310}},
            {"text": "Pushed the fix."}]},
        {"match": "Where is the session timeout", "turns": reads},
    ]


def _fleet(work: Path, base_url: str) -> tuple[dict[str, str], list[str]]:
    """Start the fleet; return its environment and the ids to wait for."""
    (work / "README.md").write_text("The login service.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZAPCLI_")}
    env.update(ZAPCLI_HOME=str(work / ".state"), ZAPCLI_CONFIG_HOME=str(work / ".config"),
               ZAPCLI_SESSION=SESSION, ZAPCLI_MAX_CONCURRENT="0", OPENAI_BASE_URL=base_url,
               OPENAI_API_KEY="sk-docs-offline-0123456789", ZAPCLI_MODEL="scripted",
               TERM="xterm-256color", COLORTERM="truecolor")
    env.pop("NO_COLOR", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    ids = [_zapcli(["spawn", "--cli", "sh", "--", cmd], env, work) for cmd in (
        "echo 'tests: 42 passed'", "echo 'lint: 3 errors' >&2; exit 3")]
    build = _zapcli(["spawn", "--cli", "sh", "--", "echo compiling; sleep 120"], env, work)
    ids += [build, _zapcli(["spawn", "--cli", "sh", "--after", build, "--", "make package"],
                           env, work)]
    child = "zapcli spawn --cli sh --"  # its work spawns two more: t shows the tree
    ids.append(_zapcli(["spawn", "--cli", "sh", "--", f"{child} 'make docs; sleep 120' && "
                        f"{child} 'make wheel; sleep 120' && sleep 120"], env, work))
    ids.append(_zapcli(["spawn", "--agent", "explorer", "Where is the session timeout set?"],
                       env, work))
    ids.append(_zapcli(["spawn", "--agent", "fixer", "--approval", "confirm",
                        "The login times out after 30 s: fix it and push the branch"], env, work))
    return env, ids


def _wait(cond: Callable[[], object], timeout: float, what: str) -> object:
    end = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > end:
            raise RuntimeError(f"the picture's fleet: {what} did not happen within {timeout:.0f}s")
        time.sleep(0.2)


def _capture(env: dict[str, str], work: Path) -> str:
    socket = f"zapcli-docs-{uuid.uuid4().hex[:8]}"

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", socket, *args], env=env, cwd=work, text=True,
                              capture_output=True, timeout=30, check=True).stdout

    tmux("new-session", "-d", "-s", "top", "-x", str(SIZE[0]), "-y", str(SIZE[1]),
         f"'{sys.executable}' -m zapcli top; sleep 30")
    try:
        _wait(lambda: "refs/heads/fix/login-timeout" in tmux("capture-pane", "-p", "-t", "top")
              and "loading" not in tmux("capture-pane", "-p", "-t", "top"), 60,
              "top showing the pending request")
        time.sleep(1.5)  # a tick more: elapsed times and the explorer's tokens
        return tmux("capture-pane", "-e", "-p", "-t", "top")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=30)


def svg_of(ansi: str, width: int = SIZE[0]) -> str:
    """The captured screen (ANSI text) as rich draws a terminal in SVG."""
    from rich.console import Console
    from rich.text import Text

    console = Console(record=True, width=width, force_terminal=True, color_system="truecolor",
                      file=io.StringIO(), legacy_windows=False)
    # whole: tmux carries the attributes of one line into the next
    console.print(Text.from_ansi(ansi.rstrip("\n")), overflow="crop", no_wrap=True)
    return console.export_svg(title="zapcli top")


def make(folder: Path, shoot: Callable[..., None] | None = None) -> Path:
    """Write top.svg (and, with `shoot`, top.png) in `folder`; the picture's path."""
    if shutil.which("tmux") is None:
        raise Unavailable("tmux is not installed (make tmux, or apt-get install tmux)")
    try:
        import textual  # noqa: F401
    except ImportError:
        raise Unavailable("Textual is not installed: pip install 'zapcli[tui]'") from None
    from zapcli.testing import ScriptedServer

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zapcli-docs-top-") as tmp, \
            ScriptedServer(_script()) as srv:
        work = Path(tmp)
        env, ids = _fleet(work, srv.base_url)
        try:
            trail = work / ".state" / "subagents" / f"{ids[-1]}.jsonl"
            _wait(lambda: trail.is_file() and b'"approval_request"' in trail.read_bytes(), 60,
                  "the fixer's approval request")
            ansi = _capture(env, work)
        finally:
            subprocess.run([sys.executable, "-m", "zapcli", "kill", "--all", "--grace", "1"],
                           env=env, cwd=work, capture_output=True, timeout=60)
    svg = folder / "top.svg"
    svg.write_text(svg_of(ansi), encoding="utf-8")
    if shoot is None:
        return svg
    png = folder / "top.png"
    shoot(svg, png, f"{SIZE[0] * 10 + 40},{SIZE[1] * 22 + 90}")
    return png


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")

    def _shoot(page: Path, png: Path, size: str) -> None:
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([str(chromium), "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", f"--user-data-dir={profile}",
                            f"--window-size={size}", f"--screenshot={png}", page.as_uri()],
                           capture_output=True, timeout=120, check=False)

    print(make(out, shoot=_shoot if chromium else None))
