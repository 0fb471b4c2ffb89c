"""`zapcli doctor`: check config, state folder, definitions, model reachability, MCP servers."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.ops.doctor import run_checks


def execute(json: bool = False) -> int:
    from zapcli.errors import ZapcliError
    from zapcli.ops.doctor import Check
    from zapcli.providers.probe import probe  # the one model import a parent command makes

    checks, settings = run_checks()
    try:
        ok, detail = probe(settings.model, settings.providers)
    except ZapcliError as exc:
        ok, detail = False, exc.message
    checks.append(Check("model", ok, detail))
    if json:
        emit_json({"ok": all(c.ok for c in checks), "checks": [vars(c) for c in checks]})
    else:
        lines: list[tuple[str, str]] = []
        for c in checks:
            word, style = ("FAIL", "red") if not c.ok else ("WARN", "yellow") if c.warning else ("ok  ", "green")
            lines.append((style, f"{word} {c.name}: {c.detail}"))
            lines.extend(("", f"    {p}") for p in c.problems)
        emit_lines(lines)
    return 0 if all(c.ok for c in checks) else 1
