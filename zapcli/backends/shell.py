"""The `sh` backend: the task is a POSIX shell script, its exit code decides.

Imports `zapcli.backends.base`; its run, `zapcli.backends.sh`, and
`zapcli.tools.env` (a model's shell's environment), only in the runner. At spawn it refuses the agent options (a shell command has no model,
definition or approvals); a token or dollar budget is its work's tree budget:
the subagents its commands spawn are allotted from it. It has no final report: its output
is its result, and an empty one is no failure.
"""

from __future__ import annotations

from zapcli.backends.base import Backend, RunContext, SpawnInput

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.trail.model import Outcome

SANDBOXED = ("auto", "on")  # the spawn record's `sandbox` values that build one (the rest: none)
AGENT_ONLY = ("--agent, --model, --approval and --unattended are for agents (zapcli and the "
              "agent CLIs), not a shell command; drop them for --cli sh")


class ShBackend(Backend):
    """`--cli sh`: the task is a shell script; its exit code decides."""

    name = "sh"
    summary = "a POSIX shell command"
    reports = False
    sandbox_default = "off"  # the user's own command: in the sandbox with --sandbox

    def prepare(self, spawn: SpawnInput) -> tuple[dict[str, Any], tuple[str, ...]]:
        # --max-tokens (as --max-cost) is the tree budget its work's spawns share (`ops.tree`)
        if spawn.agent or spawn.model or spawn.unattended or spawn.approval:
            from zapcli.errors import UsageError

            raise UsageError(AGENT_ONLY)
        return {"agent": None, "model": None, "definition": None}, ()

    def run(self, ctx: RunContext) -> Outcome:
        from zapcli.backends.sh import run

        box = held = None
        if ctx.spawn.raw.get("sandbox") in SANDBOXED:  # `spawn --sandbox`
            # only then the sandbox's machinery (policy, definitions, YAML):
            # an unsandboxed shell's runner starts without it, faster and smaller
            from zapcli.backends.sandboxed import shell_box
            from zapcli.trail.model import Outcome

            got = shell_box(ctx)
            if isinstance(got, Outcome):
                return got
            box, held = got
        try:
            return run(ctx.task, cwd=ctx.spawn.cwd or "/", out=ctx.out, err=ctx.err,
                       deadline_mono=ctx.deadline_mono, grace_s=ctx.spawn.kill_grace_s,
                       terminated=ctx.terminated, stop_grace=ctx.stop_grace, box=box,
                       env=model_shell_env(ctx.spawn.raw.get("model_shell")))
        finally:
            if held is not None:
                held.release()  # the sandbox has ended: its placeholders go


# zapcli's own places, so a model's shell that runs zapcli finds the same state
ZAPCLI_PLACES = ("ZAPCLI_HOME", "ZAPCLI_CONFIG_HOME", "ZAPCLI_SESSION")


def model_shell_env(chosen: Any) -> dict[str, str] | None:
    """The environment of a shell a model chose (`model_shell` in its spawn
    record: the run's `subagent` tool, `mcp serve`, `zapcli call`): what the
    model's own bash gets (`zapcli.tools.env.scrubbed_env`: no key unless
    the definition it runs under names it), never the spawner's keys. None
    for the user's own command, which inherits everything."""
    if not isinstance(chosen, dict):
        return None
    import os

    from zapcli.tools.env import looks_secret, scrubbed_env

    names = [n for n in chosen.get("env") or () if isinstance(n, str)]
    # where traces go (a zapcli it runs joins the tree), never a collector's credentials
    traces = [n for n in os.environ if n.startswith("OTEL_") and not n.endswith("_HEADERS")
              and not looks_secret(n)]
    return scrubbed_env(os.environ, [*names, *ZAPCLI_PLACES, *traces])
