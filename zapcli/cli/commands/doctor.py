"""`zapcli doctor`: check config, state folder, definitions, model reachability, MCP servers."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.ops.doctor import run_checks


def execute(json: bool = False) -> int:
    checks = run_checks()
    if json:
        emit_json({"ok": all(c.ok for c in checks), "checks": [vars(c) for c in checks]})
    else:
        emit_lines([("green" if c.ok else "red", f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
                    for c in checks])
    return 0 if all(c.ok for c in checks) else 1
