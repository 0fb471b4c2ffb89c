"""The documentation's pictures, made while the site builds — never by hand.

Each picture is a function in `PICTURES`: given a folder, it writes its PNG
there and returns the path, or raises `Unavailable` saying what is missing.
The build (an MkDocs hook, mkdocs.yml `hooks:`) runs each once, adds the file
to the site as `images/<name>`, and pages show it as `../images/<name>`.

- `timeline.png`: a small offline fleet — shell subagents (one fails, one
  waits in the queue), two agent subagents, and a `zapcli run` whose model
  delegates to two more — all against zapcli's scripted model server, drawn by
  `zapcli timeline --html` and photographed by headless Chromium (Debian's
  `chromium`, which `make docs` and `make test-tools` install).

Adding the `top` screen (for when `zapcli top` exists): write `top_screen(folder)`
that starts the same fleet (`_fleet`), runs `zapcli top` in a detached tmux
session of a fixed size (`tmux new-session -d -x 120 -y 32 'zapcli top'`),
waits for its first full frame, captures it with `tmux capture-pane -e -p`
(the text with its colours), renders that to an image (rich's
`Console(record=True)` prints the ANSI text and `export_svg` writes it; the
`_shoot` below photographs the SVG), and register it: `PICTURES["top.png"] =
top_screen`. Pages then show `![...](../images/top.png)`.

The pictures are made in `docs-pictures/` beside the site folder
(`build/docs-pictures/` for `make docs`). `ZAPCLI_DOCS_PICTURES`: unset, a
picture that cannot be made is a warning (so `mkdocs build --strict` fails);
`optional`, an info line, and its pages say where the picture would be;
`reuse`, a picture already made there is taken as it is (for `mkdocs serve`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.pictures")
MADE: dict[str, Path] = {}
MISSING: dict[str, str] = {}


class Unavailable(Exception):
    """What this machine lacks to make a picture."""


def _zapcli(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> str:
    res = subprocess.run([sys.executable, "-m", "zapcli", *args], env=env, cwd=cwd, text=True,
                         capture_output=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"zapcli {' '.join(args)} failed ({res.returncode}): {res.stderr}")
    return res.stdout


READER = ("name: reader\ndescription: Answers questions about the notes. Read-only.\n"
          "tools: [read, grep, glob]\n")


def _script() -> list[dict]:
    def spawn(task: str) -> dict:
        return {"name": "subagent", "arguments": {"action": "spawn", "agent": "reader", "task": task}}

    def reads(word: str, path: str) -> dict:
        return {"match": word, "loop": True, "turns": [
            {"tool_calls": [{"name": "grep", "arguments": {"pattern": word, "path": "notes"}}],
             "delay_s": 0.6, "usage": {"prompt_tokens": 420, "completion_tokens": 18}},
            {"tool_calls": [{"name": "read", "arguments": {"path": path}}], "delay_s": 0.8,
             "usage": {"prompt_tokens": 610, "completion_tokens": 22}},
            {"text": f"{path}:1 answers it.", "delay_s": 0.5,
             "usage": {"prompt_tokens": 700, "completion_tokens": 30}}]}

    return [
        {"match": "Summarise the notes", "turns": [
            {"text": "Two readers.", "tool_calls": [spawn("What does the upload note say?"),
                                                   spawn("What does the cache note say?")],
             "delay_s": 0.7, "usage": {"prompt_tokens": 900, "completion_tokens": 60}},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait"}}],
             "usage": {"prompt_tokens": 1300, "completion_tokens": 12}},
            {"text": "Uploads are retried three times; the cache expires after ten minutes.",
             "delay_s": 0.6, "usage": {"prompt_tokens": 2100, "completion_tokens": 40}}]},
        reads("upload", "notes/upload.md"), reads("cache", "notes/cache.md"), reads("log", "notes/log.md")]


def _fleet(work: Path) -> tuple[dict[str, str], list[str]]:
    """Run the fleet; return its environment and the sessions to draw."""
    from zapcli.testing import ScriptedServer

    (work / "notes").mkdir(parents=True)
    (work / "notes" / "upload.md").write_text("Retry the upload three times, then give up.\n")
    (work / "notes" / "cache.md").write_text("The cache expires after ten minutes.\n")
    (work / "notes" / "log.md").write_text("Logs rotate daily.\n")
    (work / ".zapcli" / "subagents").mkdir(parents=True)
    (work / ".zapcli" / "subagents" / "reader.yml").write_text(READER)
    srv = ScriptedServer(_script())
    srv.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZAPCLI_")}
    env.update(ZAPCLI_HOME=str(work / ".state"), ZAPCLI_CONFIG_HOME=str(work / ".config"),
               ZAPCLI_SESSION="docs-fleet", ZAPCLI_MAX_CONCURRENT="4", OPENAI_BASE_URL=srv.base_url,
               OPENAI_API_KEY="sk-docs-offline-0123456789", ZAPCLI_MODEL="scripted", NO_COLOR="1")
    try:
        _zapcli(["trust", str(work)], env, work)  # the folder's reader.yml is ours: trust it, as a user would
        ids = [_zapcli(["spawn", "--cli", "sh", "--", cmd], env, work).strip() for cmd in
               ("sleep 1.5; echo built", "sleep 3; echo 'tests: 42 passed'", "sleep 1; exit 3")]
        ids += [_zapcli(["spawn", "--agent", "reader", task], env, work).strip()
                for task in ("How is the upload retried?", "How often do logs rotate?")]
        ids.append(_zapcli(["spawn", "--cli", "sh", "--", "sleep 1; echo queued until a slot freed"],
                           env, work).strip())
        run = json.loads(_zapcli(["run", "--json", "Summarise the notes with two readers"], env, work))
        # wait exits 3 here (one shell subagent fails, on purpose): not an error
        subprocess.run([sys.executable, "-m", "zapcli", "wait", *ids], env=env, cwd=work,
                       capture_output=True, timeout=120)
        return env, ["docs-fleet", run["run_id"]]
    finally:
        srv.stop()


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise Unavailable("chromium is not installed (make chromium, or apt-get install chromium)")
    return found


def _shoot(page: Path, png: Path, size: str = "1280,500") -> None:
    """Headless Chromium's screenshot of a local page (a fresh profile, no network)."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
                        "--virtual-time-budget=5000", f"--window-size={size}",
                        f"--screenshot={png}", page.as_uri()],
                       capture_output=True, timeout=120, check=False)
    if not png.is_file() or png.stat().st_size < 10_000:
        raise RuntimeError(f"chromium wrote no screenshot of {page}")


def timeline(folder: Path) -> Path:
    _chromium()
    with tempfile.TemporaryDirectory(prefix="zapcli-docs-fleet-") as tmp:
        work = Path(tmp)
        env, sessions = _fleet(work)
        page = work / "fleet.html"
        _zapcli(["timeline", *(a for s in sessions for a in ("--session", s)), "--html", str(page)], env, work)
        png = folder / "timeline.png"
        _shoot(page, png)
        return png


PICTURES = {"timeline.png": timeline}


def on_files(files, config):  # noqa: ANN001 — MkDocs' hook signature
    mode = os.environ.get("ZAPCLI_DOCS_PICTURES", "")
    out = Path(config.site_dir).resolve().parent / "docs-pictures"
    out.mkdir(parents=True, exist_ok=True)
    for name, make in PICTURES.items():
        started = time.monotonic()
        try:
            cached = out / name
            path = cached if mode == "reuse" and cached.is_file() else make(out)
        except Unavailable as exc:
            MISSING[name] = str(exc)
            (log.info if mode == "optional" else log.warning)(f"picture {name} left out: {exc}")
            continue
        MADE[name] = path
        log.info(f"picture {name} made in {time.monotonic() - started:.1f}s")
        files.append(File.generated(config, f"images/{name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):  # noqa: ANN001
    """A picture that could not be made: its page says so in its place."""
    for name, why in MISSING.items():
        markdown = re.sub(rf"!\[[^\]]*\]\([^)]*images/{re.escape(name)}\)",
                          f"!!! note \"The picture {name} is made by the build\"\n"
                          f"    This build could not make it: {why}.", markdown)
    return markdown
