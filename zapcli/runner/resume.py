"""`--resume-after-limit` (C42): a subagent its account's usage limit stopped
is continued once the limit resets — only when its spawn asked; nothing
else ever resumes by itself.

Imports `zapcli.paths`, `zapcli.redact`, the standard library. At the end of
the limited subagent's runner: `zapcli continue ID TEXT` makes its
continuation at once (a spawn like any other: allotted from the same tree's
budget, or refused when the tree cannot fund it), which the account's hold
keeps queued until the reset; and a sleeper, detached, with no key in its
environment, looks at the queue when the reset comes (`zapcli poll`), so the
continuation starts then even if nobody else looks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from zapcli.paths import child_env
from zapcli.redact import is_secret_name
from zapcli.selfexec import python_c, python_m

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.trail.model import SpawnRecord

TEXT = ("Your account's usage limit stopped you, and it has reset now: go on with the task "
        "from where you stopped.")
SETTLE_S = 5.0  # a look this long after the reset: the provider's clock and ours differ a little
CONTINUE_TIMEOUT_S = 60.0


def after_the_reset(sid: str, spawn: SpawnRecord, limit: dict[str, Any]) -> str | None:
    """Continue `sid` after its usage limit resets; its continuation's id, or
    None when it could not be made (said on stderr, which its `.err` keeps)."""
    env = child_env(dict(os.environ))
    parent = spawn.raw.get("parent")
    if isinstance(parent, str) and parent.startswith("sa_"):
        env["ZAPCLI_SUBAGENT_ID"] = parent  # its tree: the allotment comes from its parent's
    try:
        proc = subprocess.run(python_m("zapcli", "continue", sid, TEXT),
                              env=env, cwd=spawn.cwd or "/", capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=CONTINUE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        sys.stderr.write(f"zapcli: {sid} could not be continued after its usage limit: {exc}\n")
        return None
    new = proc.stdout.strip().splitlines()[-1:] if proc.returncode == 0 else []
    if not new:
        sys.stderr.write(f"zapcli: {sid} could not be continued after its usage limit: "
                         f"{proc.stderr.strip()[-500:]}\n")
        return None
    at = limit.get("resets_at")
    _look_at(new[0], float(at) if isinstance(at, (int, float)) else time.time(), env)
    return new[0]


def _look_at(sid: str, when: float, env: dict[str, str]) -> None:
    """A detached sleeper that runs `zapcli poll --no-wait ID` at `when`: the
    queue drains then. Its environment keeps no key (the continuation's
    own environment was kept at its spawn)."""
    quiet = {k: v for k, v in env.items() if not is_secret_name(k)}
    wait = max(when - time.time(), 0.0) + SETTLE_S
    script = ("import subprocess, sys, time; time.sleep(float(sys.argv[1])); "
              "subprocess.run(sys.argv[3:] + ['poll', '--no-wait', sys.argv[2]], "
              "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)")
    try:
        subprocess.Popen(python_c(script, f"{wait:.1f}", sid, *python_m("zapcli")), env=quiet,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        pass  # the next look at the queue starts it
