"""`zapcli doctor`: check config, state folder, definitions, model reachability, MCP servers."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.ops.doctor import run_checks


def execute(json: bool = False) -> int:
    from zapcli.config import load_settings
    from zapcli.errors import ZapcliError
    from zapcli.ops.doctor import Check
    from zapcli.providers.probe import probe  # the one model import a parent command makes

    checks = run_checks()
    if all(c.ok for c in checks if c.name == "config"):
        try:
            ok, detail = probe(load_settings().model, load_settings().providers)
        except ZapcliError as exc:
            ok, detail = False, exc.message
        checks.append(Check("model", ok, detail))
    if json:
        emit_json({"ok": all(c.ok for c in checks), "checks": [vars(c) for c in checks]})
    else:
        emit_lines([("green" if c.ok else "red", f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
                    for c in checks])
    return 0 if all(c.ok for c in checks) else 1
