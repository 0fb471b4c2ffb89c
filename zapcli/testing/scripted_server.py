"""`python -m zapcli.testing.scripted_server`: a scripted model server on
127.0.0.1 (Chat Completions by default; `--protocol` picks another).
Imports `zapcli.testing.script` and `zapcli.testing.server`.

The script format is described in `zapcli.testing.script`. The first stdout
line is `listening <base URL>` (`http://127.0.0.1:PORT/v1` for chat, the bare
root for anthropic, as ANTHROPIC_BASE_URL wants it); it serves until SIGTERM.
"""

from __future__ import annotations

import sys

from zapcli.testing.script import EXHAUSTED_TEXT, ScriptError, load_script, validate_script
from zapcli.testing.server import ScriptedServer, main

__all__ = ["EXHAUSTED_TEXT", "ScriptError", "ScriptedServer", "load_script", "main",
           "validate_script"]

if __name__ == "__main__":
    sys.exit(main())
