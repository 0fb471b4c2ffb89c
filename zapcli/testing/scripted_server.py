"""`python -m zapcli.testing.scripted_server`: a scripted model server on
127.0.0.1 (Chat Completions by default; `--protocol` picks another).
Imports `zapcli.testing.script` and `zapcli.testing.server`.

The script format is described in `zapcli.testing.script`. The first stdout
line is `listening <base URL>`, the URL a client is given
(`http://127.0.0.1:PORT/v1` for chat and responses, the bare root for
anthropic and gemini, whose clients append their own paths); the second,
`use: VARIABLE=<base URL>`, names the variable that takes it
(OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL). It serves
until SIGTERM. With `--background` it serves from a process of its own and
prints, once that listens, `export VARIABLE=<base URL>` and `export
SCRIPTED_SERVER_PID=<pid>` for a shell to eval: no port to copy by hand.
"""

from __future__ import annotations

import sys

from zapcli.testing.script import EXHAUSTED_TEXT, ScriptError, load_script, validate_script
from zapcli.testing.server import ScriptedServer, main

__all__ = ["EXHAUSTED_TEXT", "ScriptError", "ScriptedServer", "load_script", "main",
           "validate_script"]

if __name__ == "__main__":
    sys.exit(main())
