"""`echo-agent`: a tiny agent CLI with a JSON-lines stream of its own.

`echo-agent --version` prints its version. `echo-agent --json [--resume ID]`
reads the task on stdin and prints events, one JSON object a line:
`hello` (session id, version), `say` (text), `done` (the answer, tokens).
It keeps each session in $ECHO_AGENT_HOME/sessions/ID.json, so a resumed
session knows what was said before. Tasks: `remember WORD` answers
`noted WORD`; `recall` answers with what was remembered; `sleep N` sleeps
first (to be killed); `silent` ends with no answer; anything else is echoed.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

VERSION = "1.2.0"


def _say(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> int:
    args = sys.argv[1:]
    if "--version" in args:
        print(f"echo-agent {VERSION}")
        return 0
    home = Path(os.environ.get("ECHO_AGENT_HOME") or ".")
    resume = args[args.index("--resume") + 1] if "--resume" in args else None
    session = resume or uuid.uuid4().hex
    path = home / "sessions" / f"{session}.json"
    memory = json.loads(path.read_text()) if resume and path.exists() else []
    task = sys.stdin.read().strip()
    _say({"type": "hello", "session": session, "version": VERSION})
    if task.startswith("sleep "):
        time.sleep(float(task.split()[1]))
    if task.startswith("remember "):
        memory.append(task.split(" ", 1)[1])
        answer = f"noted {memory[-1]}"
    elif task == "recall":
        answer = "you said: " + ", ".join(memory) if memory else "nothing remembered"
    elif task == "silent":
        answer = ""
    else:
        answer = f"echo: {task}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(memory))
    if answer:
        _say({"type": "say", "text": answer})
    _say({"type": "done", "answer": answer, "tokens": {"in": len(task), "out": len(answer)}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
