"""The shapes every agent-CLI backend shares (docs/explanation/rules.md#agent-clis), and `Cli`: an agent
CLI's facts, how its program is found and started, and its parser — what
both halves of its work use. `CliBackend`, the class each CLI's module
derives from, is `zapcli.backends.clis.backend`.

Imports the standard library, `zapcli.backends.base`, `zapcli.trail.model`.
A CLI backend turns
a `CliRequest` (what the subagent must do, under which definition and
approval mode) into a `CliLaunch` (argv, environment, stdin bytes, files for
its private config home), and gives an `EventParser` that turns each JSON
event the CLI prints into trail records `(type, fields)` with the fields of
docs/explanation/rules.md#the-trail, and knows the outcome once the stream ended. The runner does the
rest: pumping, the trail, the deadline, kill, the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zapcli.backends.base import Backend
from zapcli.trail.model import Outcome

if TYPE_CHECKING:
    from zapcli.sandbox.execonly import Launcher

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
    # zapcli's own team server (docs/explanation/rules.md#fleets-traces-teams): its tools (the session's board and messages)
    # run without asking in every approval mode, like a todo list
    trusted: bool = False


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
    # for a backend with an approval hook: an MCP server (command + args) whose
    # tool `approve` decides a permission request through zapcli's approvals
    approval_server: McpServer | None = None
    own_tree: bool = False  # the work runs in a tree zapcli created (--worktree): trust it (C25)
    # the definition's `sandbox:` ({network, writable}, docs/explanation/rules.md#sandbox); None: not declared
    sandbox: Mapping[str, Any] | None = None
    # the whole CLI runs inside zapcli's sandbox (`zapcli.backends.cli_sandbox`): a CLI
    # whose own sandbox cannot nest in it says so and uses the form that can (codex)
    boxed: bool = False
    # a budget (--max-tokens, --max-cost, or its tree's allotment) stops it as calls are
    # said: a CLI that can say each call as it starts does so (claude: partial messages)
    budgeted: bool = False


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
    # the event kinds (`type` values) it knows: those it reads and those it
    # knowingly passes over. A stream mostly of other kinds is drift (the CLI
    # changed), and the runner ends the subagent failed. None: no such check.
    event_types: frozenset[str] | None = None

    # the account's usage limit, as the stream said it (`zapcli.limitwords`); None:
    # not said there (the runner reads the CLI's error words for one)
    usage_limit: Any = None

    def feed(self, event: Any) -> list[Record]:
        raise NotImplementedError

    def recognises(self, event: Any) -> bool:
        """Whether `event` is of a kind this parser knows."""
        if self.event_types is None:
            return True
        return isinstance(event, dict) and event.get("type") in self.event_types

    def finish(self, exit_code: int | None, stderr_tail: str) -> Outcome:
        raise NotImplementedError

    def unreported(self) -> list[dict[str, Any]]:
        """`usage` fields of calls the CLI has said but reports in full only
        later (Claude Code: each call's input as it starts, the turn's usage
        at its end): what the budget counts meanwhile, and what is recorded
        (marked estimated) if the work ends before the CLI reports them."""
        return []


class NotInstalled(Exception):
    """The backend's program is not there; the message says what to install."""


@dataclass(frozen=True)
class Found:
    """A CLI backend resolved for one spawn: its argv prefix and how it speaks."""

    name: str
    command: tuple[str, ...]
    format: str

    def frozen(self) -> dict[str, Any]:
        return {"name": self.name, "command": list(self.command), "format": self.format}


def version_numbers(text: str | None) -> tuple[int, ...] | None:
    """The first dotted number in a `--version` line ("codex-cli 0.169.0" -> (0, 169, 0))."""
    import re

    m = re.search(r"\d+(?:\.\d+)+", text or "")
    return tuple(int(x) for x in m.group(0).split(".")) if m else None


def tested_text(tested: tuple[str, str]) -> str:
    return f">={tested[0]}, <{tested[1]}"


def in_tested(version: str | None, tested: tuple[str, str] | None) -> bool | None:
    """Whether `version` lies in the tested range; None when either is unknown."""
    have = version_numbers(version)
    if have is None or tested is None:
        return None
    low, high = version_numbers(tested[0]), version_numbers(tested[1])
    return bool(low is not None and high is not None and low <= have < high)


class Cli(Backend):
    """An agent CLI (docs/explanation/rules.md#agent-clis): its facts, how its program is found and
    started, what config.yaml may say about it, and the parser of its events:
    what both halves (`zapcli.backends.cli_resolve`, `.external`) use. Each
    CLI's module derives from `zapcli.backends.clis.backend.CliBackend`."""

    binary: str = ""  # looked up on PATH unless config gives backends.<name>.command
    restricts: tuple[str, ...] = ("prompt", "model", "tools", "mcp", "team")
    # with `team: true` its MCP config gets zapcli's team server: a message is handed over
    # with the answer of its next board or message call (headless, it takes no input between)
    inbox = "with the answer of its next board or message tool call"
    config_keys = ("command", "format")
    # files (glob patterns) left out when a continued subagent copies the old
    # config home: what holds the old home's absolute paths and is rebuilt
    resume_drop: tuple[str, ...] = ()
    # exit codes the CLI documents, and what each means (said when it exits so)
    exit_reasons: dict[int, str] = {}
    # In zapcli's sandbox (the whole CLI runs there): the variables of its own credentials,
    # which pass into it (every other secret-named variable stays out; None: not declared,
    # so all pass, as the start diagnostic says), and the variable naming its model
    # endpoint with the endpoint it uses without one (what `network: false` lets through).
    key_env: tuple[str, ...] | None = None
    endpoint_env: tuple[str, str] | None = None
    # names it reads as its own settings or environment in the folder it works in and in
    # every folder above it (gemini's `.gemini/`, a `.env`): a repository's own would
    # choose where its key goes and what runs unasked, so its sandbox shows them empty
    folder_config: tuple[str, ...] = ()
    # its own sandbox makes namespaces (bubblewrap) inside zapcli's, which then runs it in a
    # user namespace where it may make more (codex)
    nests: bool = False
    # its script only starts a native program of its package, which holds what the CLI
    # says: the sandbox runs that program itself, out of its commands' reach (execonly)
    launcher: Launcher | None = None

    def account(self, env: Mapping[str, str]) -> dict[str, str]:
        """Its endpoint (`endpoint_env`, else the CLI's own) and which of its
        credentials (`key_env`; none set: its own login) — the account a usage
        limit belongs to — as a hash that names no key."""
        import hashlib

        var, default = self.endpoint_env or ("", "")
        endpoint = (env.get(var) or default) if var else ""
        key = next((env[k] for k in self.key_env or () if env.get(k)), "")
        digest = hashlib.sha256("\0".join((self.name, endpoint, key)).encode(
            "utf-8", "surrogatepass")).hexdigest()[:16]
        return {"provider": endpoint or self.name, "account": digest}

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

    def join_trace(self, req: CliRequest, launch: CliLaunch) -> list[str]:
        """With OTEL_* asking for traces: make `launch` export the CLI's own
        spans as children of its subagent's span (TRACEPARENT in `req.env`),
        by what the CLI takes (its variables, its settings file;
        `zapcli.backends.clis.otel`). Returns what to say about it. The
        default: a CLI that exports no telemetry of its own."""
        return [f"{self.name} exports no telemetry of its own: only zapcli's spans of this subagent are sent"]

    def version_argv(self, command: list[str]) -> list[str]:
        return [*command, "--version"]

    def sandbox_diagnostics(self, req: CliRequest) -> list[dict[str, Any]]:
        """What of zapcli's sandbox policy (docs/explanation/rules.md#sandbox) is not enforced for this
        CLI's commands — said at every start, never a silent downgrade. A CLI
        with a sandbox of its own that zapcli maps onto says what it enforces.
        Nothing when the whole CLI runs in zapcli's sandbox (`req.boxed`:
        `zapcli.backends.cli_sandbox` says what that does)."""
        if req.boxed:
            return []
        declared = ""
        if req.sandbox is not None:
            declared = (f"; the definition's sandbox (network "
                        f"{'on' if req.sandbox.get('network') else 'off'}, writable "
                        f"{', '.join(req.sandbox.get('writable') or ['the workspace'])}) "
                        "is not enforced")
        return [{"dimension": "sandbox", "name": self.name,
                 "message": f"{self.name} runs outside zapcli's sandbox (--no-sandbox, or none "
                            "on this machine), and so do the commands it runs: zapcli's sandbox "
                            "does not wrap them (no pid namespace, no read-only file system, your "
                            "home and zapcli's state in view, the network as "
                            f"{self.name} allows){declared}"}]

    def probe_env(self, env: Mapping[str, str], scratch: Path) -> dict[str, str]:
        """The environment its `--version` runs in: what `launch` gives for a
        throwaway private home `scratch`, with HOME and the XDG folders there
        too, so that nothing a probe writes lands in the user's home (C24)."""
        req = CliRequest(task="", cwd=str(scratch), workspace=str(scratch), config_home=scratch,
                         env=env, model="version-probe")
        try:
            out = dict(self.launch(req, [self.binary or self.name]).env)
        except Exception:  # a plugin's launch may want more than a probe has: HOME alone
            out = dict(env)
        out["HOME"] = str(scratch)
        for var, rel in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                         ("XDG_STATE_HOME", ".local/state"), ("XDG_CACHE_HOME", ".cache")):
            out[var] = str(scratch / rel)
        return out

    # -- config.yaml and finding the program ---------------------------------

    def check_config(self, name: str, spec: Any) -> dict[str, Any]:
        """{command: [argv] | None, format} for `backends.<name>`; `name` is this
        CLI's own (another command for it) or a wrapper's speaking its format."""
        if not isinstance(spec, dict) or set(spec) - set(self.config_keys):
            raise ValueError(f"backends.{name}: expected keys {' and '.join(self.config_keys)} only")
        command = spec.get("command")
        if isinstance(command, str) and command.strip():
            argv: list[str] | None = [command]
        elif isinstance(command, list) and command and all(isinstance(a, str) and a for a in command):
            argv = list(command)
        elif command is None and name == self.name:
            argv = None
        else:
            raise ValueError(f"backends.{name}.command: expected a program (path or name on "
                             "PATH) or a non-empty list of arguments")
        fmt = spec.get("format", self.event_format)
        if name == self.name and fmt != self.event_format:
            raise ValueError(f"backends.{name}.format: {name} speaks {self.event_format}")
        return {"command": argv, "format": fmt}

    def find(self, name: str, spec: dict[str, Any] | None, path: str | None = None) -> Found:
        """The program for backend `name` (this CLI, or a wrapper of it):
        `backends.<name>.command` from config, else the CLI's binary on PATH.
        Raises NotInstalled saying what to install or set."""
        import os
        import shutil

        argv = list(spec["command"]) if spec and spec.get("command") else [self.binary or name]
        prog = argv[0]
        if os.sep in prog:
            full = os.path.abspath(os.path.expanduser(prog))
            found = full if os.path.isfile(full) and os.access(full, os.X_OK) else None
        else:
            found = shutil.which(prog, path=path)
        if found is None:
            if spec and spec.get("command"):
                where = (f"backends.{name}.command in config.yaml names {prog!r}, which is not "
                         "an executable program")
            else:
                where = f"the {name} CLI is not installed (no `{prog}` on PATH)"
            hint = f"install it: {self.install_hint}, or " if self.install_hint and name == self.name else ""
            raise NotInstalled(f"{where}; {hint}set backends.{name}.command in config.yaml to its "
                               "path")
        return Found(name, (found, *argv[1:]), str(self.event_format))
