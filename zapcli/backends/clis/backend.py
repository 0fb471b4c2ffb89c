"""`CliBackend`: the class each agent CLI's module derives from (docs/explanation/rules.md#agent-clis,
docs/explanation/rules.md#plugins) — `Cli` (its facts and parts) with the two halves of its work wired in:
`prepare` is `zapcli.backends.cli_resolve`, `run` is `zapcli.backends.external`,
each imported when used (they know `Cli`, never this class), and its doctor
line.

Imports `zapcli.backends.base` and `zapcli.backends.clis.base`.
A new CLI is a subclass in a module of its own, plus one line in
`zapcli.backends.registry.BUILTIN` (or an entry point, for a plugin).
"""

from __future__ import annotations

from typing import Any

from zapcli.backends.base import RunContext, SpawnInput
from zapcli.backends.clis.base import Cli, NotInstalled, in_tested, tested_text
from zapcli.trail.model import Outcome


class CliBackend(Cli):
    """An agent CLI as a backend: `Cli`'s facts and parts, and the two halves
    of its work — `prepare` is `zapcli.backends.cli_resolve`, `run` is
    `zapcli.backends.external` (each imported when used). A new CLI is a
    subclass in a module of its own, plus one registry line."""

    # the whole CLI in zapcli's sandbox where this machine can (`zapcli.backends.cli_sandbox`)
    sandbox_default = "auto"

    # -- the two halves -------------------------------------------------------

    def prepare(self, spawn: SpawnInput) -> tuple[dict[str, Any], tuple[str, ...]]:
        from zapcli.backends.cli_resolve import spawn_fields

        return spawn_fields(self, spawn)

    def run(self, ctx: RunContext) -> Outcome:
        from zapcli.backends.external import run_cli

        return run_cli(self, ctx)

    def doctor(self, configured: dict[str, Any]) -> tuple[str, bool] | None:
        """`name: version (path)` with the tested range, or what to install."""
        return self.doctor_line(self.name, configured.get(self.name))

    def doctor_line(self, name: str, spec: dict[str, Any] | None) -> tuple[str, bool]:
        import os

        from zapcli.backends import cli_home

        try:
            found = self.find(name, spec)
        except NotInstalled as exc:
            return f"{name}: not installed — {exc}", False
        command = list(found.command)
        version = cli_home.version(self.version_argv(command), command,
                                   lambda scratch: self.probe_env(os.environ, scratch))
        line = f"{name}: {version or 'version unknown'} ({' '.join(command)})"
        if self.tested is None:
            return line, True
        fits = in_tested(version, self.tested)
        if fits is None:
            line += f" — tested with {tested_text(self.tested)}; its version could not be read"
        elif fits:
            line += f" — in the tested range {tested_text(self.tested)}"
        else:
            line += (f" — not the versions zapcli was tested with ({tested_text(self.tested)}): "
                     "a changed event stream ends its subagents failed, saying so")
        return line, True
