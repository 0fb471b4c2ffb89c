"""`zapcli --help` without the CLI framework: the top-level help as typer
prints it to a pipe, rendered once by `python -m zapcli.cli.gen man` into
zapcli/cli/share/help.txt and printed from there.

Imports nothing of zapcli. Typer and rich take ~15 times a bare
interpreter's start to import and render the list of ~40 commands; scripts
and models read `--help` through a pipe, where rich's rendering is fixed (80
columns, no colour, UTF-8 boxes). The stored text is used only there: a
terminal (its width, its colours) or any variable rich or typer read to
change the layout goes to typer, which renders it as always.
"""

from __future__ import annotations

import os
import sys

STORED = os.path.join(os.path.dirname(__file__), "share", "help.txt")

# What makes typer's rich rendering differ from the stored one.
LAYOUT_ENV = ("COLUMNS", "LINES", "TERMINAL_WIDTH", "FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS",
              "TTY_COMPATIBLE", "TTY_INTERACTIVE", "_TYPER_FORCE_DISABLE_TERMINAL",
              "TYPER_USE_RICH", "JUPYTER_COLUMNS", "JUPYTER_LINES", "DATABRICKS_RUNTIME_VERSION")


def printed() -> bool:
    """Print the stored top-level help when typer would print the same text
    (stdout not a terminal, UTF-8, no layout variable set). False: typer's turn."""
    out = sys.stdout
    if out is None or any(name in os.environ for name in LAYOUT_ENV):
        return False
    try:
        if out.isatty() or (out.encoding or "").lower().replace("-", "") != "utf8":
            return False
        with open(STORED, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, ValueError):  # not installed with the package: typer renders it
        return False
    out.write(text)
    return True


def render() -> str:
    """The top-level help as typer prints it to a pipe, for the stored copy
    (run in a process of its own, without the layout variables)."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in LAYOUT_ENV}
    code = "from zapcli.cli.app import app; app(['--help'], prog_name='zapcli')"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          encoding="utf-8", check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"zapcli --help could not be rendered: {proc.stderr[-2000:]}")
    return proc.stdout
