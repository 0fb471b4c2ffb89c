"""`zapcli doctor`: check config, state folder, definitions, model reachability, MCP servers.

The model is checked when one is configured or asked for (`--model`): unreachable,
it fails. With none, the model line is a note — `sh` and the agent CLIs run
without one — so someone who only runs shell commands gets exit 0.
"""

from __future__ import annotations

from zapcli.cli.output import emit, warn
from zapcli.ops.doctor import run_checks
from zapcli.render import doctor as render

NO_MODEL_NOTE = ("none configured; only the built-in agent (spawn --cli zapcli, zapcli run) "
                 "needs one — sh and the agent CLIs run without. To use it: set ZAPCLI_MODEL "
                 "(and OPENAI_BASE_URL / OPENAI_API_KEY for its endpoint), or `model:` in "
                 "config.yaml; zapcli doctor --model M checks one")


def execute(trust: bool = False, model: str | None = None, json: bool = False) -> int:
    import os

    from zapcli.errors import ZapcliError
    from zapcli.ops.doctor import Check

    checks, settings = run_checks(trust=trust)
    chosen = next((m.strip() for m in (model, os.environ.get("ZAPCLI_MODEL"), settings.model)
                   if m and m.strip()), None)
    if chosen is None and model is None:
        checks.append(Check("model", True, NO_MODEL_NOTE, note=True))
    else:
        from zapcli.providers.probe import probe  # the one model import a parent command makes

        try:
            ok, detail = probe(chosen, settings.providers)
        except ZapcliError as exc:
            ok, detail = False, exc.message
        checks.append(Check("model", ok, detail))
    for c in checks:  # the one line every command that reads a workspace says on stderr
        if c.name == "workspace trust" and c.warning:
            warn(c.detail)
    emit(json, render.doc, render.lines, checks)
    return 0 if all(c.ok for c in checks) else 1
