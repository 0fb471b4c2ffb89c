"""What a `zapcli run` sets up around its own agent: the sandbox its
commands run in with its scratch folder (docs/explanation/rules.md#sandbox), and the identity its
children's approval requests are relayed to (docs/explanation/rules.md#tool-surfaces).

Imports `zapcli.host.sandbox`, `zapcli.definitions.model`, `zapcli.children`,
`zapcli.paths`, `zapcli.supervisor.launch`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from zapcli.errors import ZapcliError


def sandbox(choice: str, run_id: str, gate: Any, fields: dict[str, Any],
            scratch_size: int | None = None) -> tuple[Any, Path, list[dict[str, str]]]:
    """(the sandbox of this run's commands or None, its scratch folder, the
    diagnostics that say what it left out or why there is none). Raises
    ZapcliError when --sandbox asked for one this machine cannot give."""
    from zapcli import children
    from zapcli.definitions.model import SandboxSpec
    from zapcli.host.sandbox import open_sandbox, prepare
    from zapcli.paths import state_dir

    scratch = state_dir() / "runs" / f"{run_id}.tmp"
    prepared = prepare(choice, mode=gate.mode, workspace=gate.workspace,
                       writable_roots=gate.writable_roots,
                       spec=SandboxSpec.from_dict((fields.get("definition") or {}).get("sandbox")),
                       scratch=scratch, scratch_size=scratch_size, control=gate.control)
    if prepared.refused:
        raise ZapcliError(prepared.refused + "; nothing was run")
    box = open_sandbox(prepared, on_start=lambda pid: children.started(pid, "sandbox"))
    return box, scratch, prepared.diagnostics


def drop(scratch: Path) -> None:
    import shutil

    shutil.rmtree(scratch, ignore_errors=True)


def relay() -> dict[str, Any]:
    """This process's identity, recorded in each child's spawn record: the
    child's gate denies a pending request once this run is gone."""
    import socket

    from zapcli.supervisor.launch import process_create_time

    return {"pid": os.getpid(), "create_time": process_create_time(os.getpid()),
            "host": socket.gethostname()}
