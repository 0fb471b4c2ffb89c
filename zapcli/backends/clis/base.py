"""The shapes every agent-CLI adapter shares (SPEC §13).

Imports only the standard library. An adapter turns a `CliRequest` (what the
subagent must do, under which definition and approval mode) into a
`CliLaunch` (argv, environment, stdin bytes, files for its private config
home), and gives an `EventParser` that turns each JSON event the CLI prints
into trail records `(type, fields)` with the fields of SPEC §4, and knows the
outcome once the stream ended. The runner does the rest: pumping, the trail,
the deadline, kill, the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapcli.trail.model import Outcome

Record = tuple[str, dict[str, Any]]  # (record type, fields), e.g. ("text", {"delta": "hi"})


@dataclass(frozen=True)
class McpServer:
    """One MCP server the definition declares, as configured in mcp.json."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    allow: tuple[str, ...] = ()  # tools approved without asking (mcp.json `allow`)


@dataclass(frozen=True)
class CliRequest:
    """Everything an adapter needs to start its CLI for one subagent."""

    task: str
    cwd: str
    workspace: str
    config_home: Path  # private to this subagent, created 0700 and empty
    env: Mapping[str, str]  # the caller's environment (the CLI's own variables pass through)
    approval: str = "workspace"  # confirm | workspace | auto-edit | full
    unattended: bool = False
    model: str | None = None
    prompt: str | None = None  # the definition's prompt, appended to the CLI's system prompt
    tools: tuple[str, ...] | None = None  # zapcli tool names the definition grants; None = not declared
    mcp_servers: tuple[McpServer, ...] = ()
    output_schema: Mapping[str, Any] | None = None
    resume: str | None = None  # the CLI's own session id to resume (`zapcli continue`)
    # tokens the resumed session had already reported (input, output, cached), for
    # CLIs that report running totals of a session (codex): the parser counts
    # only what this run adds. None = nothing counted yet.
    resume_usage: Mapping[str, int] | None = None
    # claude only: an MCP server (command + args) whose tool `approve` decides a
    # permission request through zapcli's approvals; None = no such hook.
    approval_server: McpServer | None = None


@dataclass
class CliLaunch:
    """How to start the CLI. `stdin` None means /dev/null; bytes are written
    from a thread and the pipe closed after the last byte."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes | None = None
    files: dict[str, str] = field(default_factory=dict)  # relative to config_home -> text (0600)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)  # {dimension, name, message}


class EventParser:
    """Turns a CLI's events into records. One instance per subagent run.

    `feed` gets each line already parsed as JSON (any JSON value); lines that
    are not JSON never reach it (the runner records them as diagnostics).
    `terminal` turns True at the CLI's terminal event; after it the runner
    gives the CLI a short grace to exit. `finish` decides the outcome from
    what was seen, the exit code and the last stderr lines.
    """

    terminal: bool = False
    session_id: str | None = None  # the CLI's own session/thread id (for resume)
    version: str | None = None  # the CLI's version when its stream says it (for `start`)

    def feed(self, event: Any) -> list[Record]:
        raise NotImplementedError

    def finish(self, exit_code: int | None, stderr_tail: str) -> Outcome:
        raise NotImplementedError


class Adapter:
    """One agent CLI: its name, default binary, event format and how to start it."""

    name: str = ""
    binary: str = ""  # looked up on PATH unless config gives backends.<name>.command
    event_format: str = ""  # claude-stream-json | codex-json | gemini-stream-json | opencode-json
    install_hint: str = ""  # e.g. "npm install -g @anthropic-ai/claude-code"
    # files (glob patterns) left out when a continued subagent copies the old
    # config home: what holds the old home's absolute paths and is rebuilt
    resume_drop: tuple[str, ...] = ()

    def launch(self, req: CliRequest, command: list[str]) -> CliLaunch:
        """argv (starting with `command`), environment and files for `req`."""
        raise NotImplementedError

    def parser(self, req: CliRequest | None = None) -> EventParser:
        """A fresh parser for one run of `req` (the model it names, the usage
        a resumed session already reported)."""
        raise NotImplementedError

    def refusal(self, model: str | None, env: Mapping[str, str], cwd: str,
                own_program: bool) -> str | None:
        """Why a spawn cannot work, known before anything starts — one line
        naming what to pass or set — or None. `env` is what the CLI will get;
        `own_program` is False for a wrapper (another program name in
        `backends.<name>.command`), which may supply keys itself, so only
        what no wrapper can fix is refused then."""
        return None

    def version_argv(self, command: list[str]) -> list[str]:
        return [*command, "--version"]
