"""Whether a subagent's commands run in zapcli's OS sandbox (docs/explanation/rules.md#sandbox): the
spawn record's `sandbox` field, decided at spawn from what was asked and
the backend's `sandbox_default` fact.

Imports `zapcli.errors`, `zapcli.paths`; `zapcli.sandbox.probe` only to ask
this machine whether it can.
"""

from __future__ import annotations

from zapcli.errors import UsageError, ZapcliError, param

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHOICES = ("auto", "on", "off")


def choose(asked: str | None, backend: Any, network: bool = False) -> tuple[str, tuple[str, ...]]:
    """("auto" | "on" | "off", warnings). `asked`: --sandbox "on", --no-sandbox
    "off", None for the backend's default; `network`: the definition lets
    its commands reach the network. The default that cannot be had here is a
    warning (said at once, and again in the trail: never a silent
    downgrade); one asked for that cannot be had raises ZapcliError. So is a
    network namespace this machine cannot make for a definition without
    network: the rest of the sandbox holds, and spawn says the network does
    not."""
    default = backend.sandbox_default
    choice = asked or default or "off"
    if choice not in CHOICES:
        raise UsageError(f"{param('sandbox')} is one of {', '.join(CHOICES)}; got {choice!r}")
    if default is None:  # an agent CLI runs its commands its own way
        if choice == "on":
            raise UsageError(f"{param('sandbox')} is for backends whose commands zapcli runs; "
                             f"{backend.name} runs its commands its own way (see docs/how-to/agent-clis.md#sandbox)")
        return "off", ()
    if choice == "off":
        return "off", ()
    from zapcli.paths import state_dir
    from zapcli.sandbox import probe as bwrap  # the kept answer: no command line built here

    found = bwrap.cached(state_dir())
    if found.ok and not network and not found.network:
        if choice == "on":
            raise ZapcliError(f"{param('sandbox')} was asked for with the network off, but "
                              f"{found.network_missing}; {bwrap.NET_HINT}. Nothing was created",
                              code="no_sandbox")
        return choice, (bwrap.network_open(found),)
    if found.ok:
        return choice, ()
    if choice == "on":
        raise ZapcliError(f"{param('sandbox')} was asked for, but {found.missing}; {found.fix}. "
                          "Nothing was created", code="no_sandbox")
    return choice, (bwrap.unavailable(found),)


def for_spawn(fields: dict[str, Any], cli: str | None, asked: str | None,
              model_shell: tuple[str, ...] | None, settings: Any, backend: Any,
              network: bool = False) -> tuple[str, ...]:
    """Set a spawn record's `sandbox` (and `model_shell`: a shell a model
    chose, whose environment is a model's bash's, never the caller's keys);
    return the warnings. A model's shell is sandboxed as `asked` (a run's
    --sandbox), else as the user's config says (`model_shell_sandbox`,
    default auto: where this machine can)."""
    chosen = model_shell is not None and cli == "sh"
    fields["sandbox"], warnings = choose(
        settings.model_shell_sandbox if chosen and asked is None else asked, backend,
        network=network)
    if chosen:
        fields["model_shell"] = {"env": list(model_shell or ())}
    return warnings
