"""The backend seam: what a runner runs, and how its work becomes records.

Imports `zapcli.trail.model` and, for types only, the writer and capture.
A backend is one class that carries its facts (name, summary, install hint,
event format, approval hook, what a definition can restrict in it, its
config.yaml keys, the CLI versions it was tested with) and both halves of
the work: `prepare`, in the parent at spawn (checks, the spawn record's
fields, nothing created when it refuses), and `run`, in the runner. A
backend's module stays light: what only `run` needs is imported there. `run`
gets a `RunContext` — the frozen spawn record, the task, the trail writer,
the capped stdout/stderr files, the deadline and the SIGTERM event — and
returns the `Outcome` its runner records. It never writes the terminal
status itself; the runner ends the subagent.
"""

from __future__ import annotations

from collections.abc import Callable

from zapcli.plain import plain
from zapcli.trail.model import Outcome, SpawnRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from zapcli.config import Settings
    from zapcli.supervisor.capture import CappedFile
    from zapcli.trail.writer import TrailWriter


@plain
class RunContext:
    """Everything a backend may use. `stop_grace()` is the grace (seconds)
    the work gets after a SIGTERM: the one a `zapcli kill --grace` asked for,
    else the spawn's `kill_grace_s`."""

    sid: str
    spawn: SpawnRecord
    task: str
    writer: TrailWriter
    out: CappedFile
    err: CappedFile
    deadline_mono: float
    terminated: threading.Event
    stop_grace: Callable[[], float]


@plain
class SpawnInput:
    """What a spawn asks of a backend, for `prepare`: the chosen backend name
    (`cli`: a built-in's, a plugin's, or one config.yaml's `backends:`
    defines), the agent options, where the work runs, the settings, and the
    definitions when the caller has already read them."""

    cli: str
    workspace: Path
    cwd: Path
    settings: Settings
    agent: str | None = None
    model: str | None = None
    approval: str | None = None
    unattended: bool = False
    max_tokens: int | None = None
    catalog: Any = None


class Backend:
    """One kind of work and its facts. `in_process` backends run inside the
    runner's own interpreter (the built-in agent), so the runner also arms its
    watchdog and the SIGALRM backstop; the others run a child process the
    backend itself ends at the deadline."""

    name: str = ""  # what --cli, `cli:` and the tool's `cli` take
    summary: str = ""  # one line: what it runs
    install_hint: str | None = None  # how to get its program, when it needs one
    event_format: str | None = None  # the event stream its parser reads (agent CLIs)
    approval_hook: bool = False  # its permission requests become zapcli approval requests
    # what of a definition it applies: prompt, model, tools, mcp, skills, knowledge, memory
    restricts: tuple[str, ...] = ()
    config_keys: tuple[str, ...] = ()  # its keys under `backends.<name>` in config.yaml
    tested: tuple[str, str] | None = None  # CLI versions tested: (lowest, first one not tested)
    reports: bool = True  # its work ends with a final report: an empty one is never success
    # how a message (`zapcli send`, a sibling's `message`) reaches its work, said to the
    # sender; None: nothing can hand it one (frozen in the spawn record as `inbox`)
    inbox: str | None = None
    # where its model calls go, as OpenTelemetry's GenAI conventions name it
    # (gen_ai.provider.name: "openai", "anthropic", "gcp.gemini"); None: unknown
    genai_provider: str | None = None
    # its commands in zapcli's OS sandbox (docs/explanation/rules.md#sandbox): "auto" (by default, where
    # this machine can), "off" (only with --sandbox), None (it runs them its own way)
    sandbox_default: str | None = None
    # the project files it reads as configuration that runs commands (`.claude`,
    # `opencode.json`), relative to a workspace: added to `zapcli.control`'s one
    # list, so agent work never writes them in any writable root (every backend's,
    # whichever runs: another CLI may open the folder next)
    control_files: tuple[str, ...] = ()
    in_process: bool = False

    def prepare(self, spawn: SpawnInput) -> tuple[dict[str, Any], tuple[str, ...]]:
        """At spawn, in the parent, before anything is created: the backend's
        fields of the `spawn` record and the warnings for the caller. Raises
        ZapcliError (UsageError for options it does not take)."""
        return {"agent": None, "model": None, "definition": None}, ()

    def run(self, ctx: RunContext) -> Outcome:
        raise NotImplementedError

    def account(self, env: Mapping[str, str]) -> dict[str, str]:
        """Where its model calls go, as the spawner's environment says, for
        the queue's holds (C42, C43): `provider` (the endpoint) and `account`
        (a short hash of the credentials, never them); {} when not known."""
        return {}

    def check_config(self, name: str, spec: Any) -> dict[str, Any]:
        """`backends.<name>` of config.yaml, validated (raises ValueError saying
        what is wrong). Without `config_keys` there is nothing to set."""
        raise ValueError(f"backend name {name!r}: the {self.name} backend takes no settings "
                         "under backends: (agent CLIs take command and format)")

    def doctor(self, configured: dict[str, Any]) -> tuple[str, bool] | None:
        """`zapcli doctor`'s line for it and whether it is ready; None when it
        has nothing to check (the built-in agent's model is checked apart)."""
        return None
