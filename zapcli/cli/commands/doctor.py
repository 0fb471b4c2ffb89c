"""`zapcli doctor`: check config, state folder, definitions, model reachability, MCP servers."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops.doctor import run_checks
from zapcli.render import doctor as render


def execute(trust: bool = False, json: bool = False) -> int:
    from zapcli.errors import ZapcliError
    from zapcli.ops.doctor import Check
    from zapcli.providers.probe import probe  # the one model import a parent command makes

    checks, settings = run_checks(trust=trust)
    try:
        ok, detail = probe(settings.model, settings.providers)
    except ZapcliError as exc:
        ok, detail = False, exc.message
    checks.append(Check("model", ok, detail))
    emit(json, render.doc, render.lines, checks)
    return 0 if all(c.ok for c in checks) else 1
