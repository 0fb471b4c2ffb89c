"""The declaration: every action a model can call, its parameters, and the
CLI command each one mirrors.

Imports `zapcli.backends.registry` (backend names, when the schema is made),
`zapcli.config` (approval modes),
`zapcli.trail.model` (statuses). Everything else in `zapcli.toolapi` and the
MCP server is generated from `ACTIONS`. A parameter is named like the CLI
command's parameter (`cli` says where the CLI spells it differently), so a
test can check that the declaration describes nothing the CLI lacks.
"""

from __future__ import annotations

from zapcli.config import APPROVAL_MODES
from zapcli.trail.model import ALL as STATUSES

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable

SCOPES = ("system", "workspace")


class Param:
    """One parameter. `type`: string, integer, number, boolean or array (of
    strings). `required`: the action refuses the call without it (the schema
    still lists every parameter as required-and-nullable, for strict mode).
    `cli`: the CLI command's parameter name when it differs; None when the
    CLI has it under the same name; "" when only the tool has it (say why in
    `description`). A callable `enum` is computed when first asked, and its
    values are checked by the action itself, not by the dispatcher: the
    backend names (a config.yaml wrapper, a plugin) cost a look-up that a
    call naming a built-in must not pay."""

    # Plain classes, not dataclasses: `zapcli call` is on the fast path, and a
    # dataclass costs about a millisecond to create at import.
    def __init__(self, name: str, type: str, description: str, required: bool = False,
                 enum: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None,
                 cli: str | None = None, run_description: str | None = None,
                 object_ok: bool = False):
        self.name, self.type, self.description, self.required = name, type, description, required
        self._enum, self.cli, self.run_description = enum, cli, run_description
        # a JSON value as text, also taken as the object itself: OpenAI's strict
        # mode has no free-form object (every object needs its properties listed)
        self.object_ok = object_ok
        self.checked_by_action = callable(enum)

    @property
    def enum(self) -> tuple[str, ...] | None:
        """The allowed values (computed when first asked: the backend names)."""
        if callable(self._enum):
            self._enum = tuple(self._enum())
        return self._enum


class Action:
    def __init__(self, name: str, description: str, params: tuple[Param, ...], command: str, *,
                 read_only: bool = True, destructive: bool = False, in_run: bool = True,
                 run_hidden: tuple[str, ...] = (), run_description: str | None = None):
        self.name, self.description, self.params = name, description, params
        self.command = command  # the CLI command it mirrors, e.g. "poll", "agents save"
        self.read_only, self.destructive = read_only, destructive
        self.in_run = in_run  # offered by the `subagent` tool of `zapcli run`
        self.run_hidden = run_hidden  # parameters `zapcli run` decides itself
        self.run_description = run_description

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def _backends() -> tuple[str, ...]:
    """Every backend: built-ins, plugins, and the wrappers the user's config.yaml defines."""
    from zapcli.backends import registry
    from zapcli.backends.sections import OWNERS
    from zapcli.config import load_settings

    return registry.names(registry.configured(load_settings(lenient=True, owners=OWNERS)))


def _ids(what: str, required: bool = True) -> Param:
    return Param("ids", "array", f"Subagent ids to {what}.", required=required)


def _id(what: str) -> Param:
    return Param("id", "string", f"The subagent id to {what}.", required=True)


# how merge and pick take the work: a merge (the default), or one of these
_HOW = (Param("squash", "boolean", "One commit instead of a merge."),
        Param("rebase", "boolean", "Replay its commits on the checkout's branch."))

ACTIONS: tuple[Action, ...] = (
    Action("spawn", "Start a subagent in the background; returns its id at once. Spawn several "
           "(one call each) to work in parallel, then wait for them.", (
               Param("task", "string", "The complete, self-contained task (UTF-8, up to 1 MB); "
                     "for cli sh, the shell command.", required=True),
               Param("cli", "string", "Backend: zapcli (the built-in LLM agent, the default), "
                     "sh (the task is a shell command), or another agent CLI zapcli knows.",
                     enum=_backends),
               Param("agent", "string", "Definition to use (e.g. explorer, code-reviewer; the "
                     "agents action lists them)."),
               Param("model", "string", "Model for this subagent."),
               Param("timeout", "number", "Deadline in seconds (more than 0, at most 604800; "
                     "default 300)."),
               Param("approval", "string", "What asks for approval: confirm, workspace (the "
                     "default), auto-edit or full; at most as loose as the user's own setting "
                     "(looser asks the user, or is refused).", enum=APPROVAL_MODES),
               Param("cwd", "string", "Directory to run in (default: the server's); inside the "
                     "server's workspace or the user's writable_roots."),
               Param("after", "array", "Start only after these subagent ids completed."),
               Param("max_tokens", "integer", "Token budget (input + output), more than 0.",
                     run_description="Tokens for this subagent, from the run's budget (default: "
                     "an even share of what is not yet reserved among the subagents spawned in "
                     "this message, one share kept for you); what it does not use returns when "
                     "it ends."),
               Param("max_cost", "number", "Budget in US dollars, more than 0 (an unpriced "
                     "model is refused)."),
               Param("unattended", "boolean", "Deny at once whatever would ask for approval."),
               Param("worktree", "boolean", "Work in a new git worktree on branch zapcli/<id>, "
                     "from the current HEAD of the repository holding cwd (parallel edits to one "
                     "repository never collide; the branch holds the result)."),
               Param("output_schema", "string", "A JSON Schema the final report must satisfy, "
                     "inline: the schema object, or its JSON text; poll then carries the parsed "
                     "report as `structured`.", object_ok=True),
               Param("fork", "boolean", "Only in `zapcli run` (the CLI has no conversation to "
                     "fork): start from the run's conversation so far, then `task`.", cli="",
                     run_description="Start from your conversation so far "
                     "(your instructions and every message until this call), then `task`: it "
                     "knows what you know; the built-in agent only."),
               Param("attempts", "integer", "Start this many attempts at the task (1-16), each in "
                     "its own worktree; the attempts action compares them, pick keeps one."),
               Param("attempt_cli", "array", "Backends for the attempts, used in turn (e.g. "
                     "[\"claude\", \"codex\"]); implies attempts."),
               Param("attempt_model", "array", "Models for the attempts, used in turn; implies "
                     "attempts."),
           ), "spawn", read_only=False, run_hidden=("approval", "cwd", "unattended")),
    Action("poll", "Status and folded output of subagents; waits up to 5 s + wait_secs for them "
           "to end, or until one asks for approval (no_wait: check once).", (
               _ids("check"),
               Param("wait_secs", "integer", "Extra seconds to wait, 0 to 30 (default 0)."),
               Param("no_wait", "boolean", "Check once and return at once (not with wait_secs)."),
           ), "poll"),
    Action("wait", "Block until the subagents end (or one of them, with any), then show their "
           "status and folded output.", (
               Param("ids", "array", "Subagent ids to wait for; omit them to wait for every "
                     "subagent of this session that has not ended (and any you started whose end "
                     "you have not been shown); an empty list is nothing to wait for.",
                     run_description="Subagent ids to wait for; omit them to wait for every "
                     "subagent you started that has not ended or whose end you have not been "
                     "shown; an empty list is nothing to wait for."),
               Param("timeout", "number", "Give up after this many seconds (0: check once)."),
               Param("any", "boolean", "Return when any one has ended."),
           ), "wait"),
    Action("list", "Subagents of this session (all: every session), newest first.", (
        Param("all", "boolean", "Every session, not just this one."),
        Param("status", "string", "Only subagents with this status.", enum=STATUSES),
    ), "list", run_description="The subagents this run started, newest first."),
    Action("kill", "Stop subagents: SIGTERM to the whole process tree, SIGKILL after the grace "
           "period; pending approvals are denied.", (
               _ids("stop", required=False),
               Param("all", "boolean", "Every running and queued subagent of this session."),
               Param("grace", "number", "Seconds between SIGTERM and SIGKILL (default 3)."),
           ), "kill", read_only=False, destructive=True),
    Action("output", "The whole captured output of one subagent, unfolded (a tool result shows "
           "at most 24 KB: its head and tail).", (
               _id("read"),
               Param("stderr", "boolean", "Captured stderr instead of stdout."),
           ), "output"),
    Action("replay", "Everything a subagent did, from its trail: tool calls and results, "
           "approvals, usage, report, final status.", (
               _id("replay"),
               Param("since", "integer", "Only records after this sequence number."),
           ), "replay"),
    Action("send", "Steer a running zapcli subagent: the text reaches its model before its next "
           "model call, if it makes one (poll says when it ended first).", (
               _id("steer"),
               Param("text", "string", "The message (up to 32 KB).", required=True),
           ), "send", read_only=False),
    Action("diff", "A worktree subagent's work against its base: committed and uncommitted "
           "(untracked files too), as a patch, a stat or file names.", (
               _id("diff"),
               Param("stat", "boolean", "Files with their changed lines, and the totals."),
               Param("name_only", "boolean", "Only the names of the changed files."),
           ), "diff"),
    Action("attempts", "Compare the attempts of a spawn with attempts: status, diff stat, "
           "tokens, cost, whether each still merges cleanly, and a check command's result.", (
               Param("id", "string", "The id of any one of the attempts.", required=True),
               Param("check", "string", "A shell command run in each finished attempt's tree "
                     "(e.g. make test); asks for approval like bash, and runs as a model's "
                     "shell does: sandboxed in that tree, no network, no API keys."),
           ), "attempts", read_only=False),
    Action("merge", "Merge a finished worktree subagent's work (uncommitted work committed on "
           "its branch first) into the current branch of the checkout it was spawned from; "
           "refused, changing nothing, on a conflict or uncommitted changes in its paths. A "
           "person approves it, as a configuration change.", (
               _id("merge"), *_HOW), "merge", read_only=False),
    Action("pick", "Keep one attempt: merge it (as merge does, with the same approval), stop "
           "the other attempts and remove their trees (their work stays on their branches).", (
               _id("keep"), *_HOW,
               Param("force", "boolean", "Pick it even though it did not complete (failed, "
                     "timeout, cancelled, lost): refused otherwise.")),
           "pick", read_only=False, destructive=True),
    Action("approve", "Approve a subagent's pending approval request; it resumes within 500 ms.", (
        _id("approve"),
        Param("req", "string", "The request id (default: the pending one)."),
    ), "approve", read_only=False, in_run=False),
    Action("deny", "Deny a subagent's pending approval request; its model is told the reason.", (
        _id("deny"),
        Param("req", "string", "The request id (default: the pending one)."),
        Param("reason", "string", "Why; told to the subagent's model."),
    ), "deny", read_only=False, in_run=False),
    Action("agents", "Subagent definitions: every one with its layer, file, model and "
           "diagnostics, or one in full (name).", (
               Param("name", "string", "Show this definition in full.", cli=""),
           ), "agents list", in_run=False),
    Action("usage", "Token totals per subagent and per session.", (
        Param("all", "boolean", "Every session, not just this one."),
    ), "usage", in_run=False),
    Action("agents_save", "Validate a definition (YAML text) and install it as a system or "
           "workspace definition; built-in names are refused. A configuration change.", (
               Param("yaml", "string", "The definition file's text (YAML with name, description, "
                     "tools, prompt, ...).", required=True, cli="file"),
               Param("scope", "string", "system (the user's) or workspace (the default).",
                     enum=SCOPES),
           ), "agents save", read_only=False, in_run=False),
    Action("agents_delete", "Delete a system or workspace definition (never a built-in). A "
           "configuration change.", (
               Param("name", "string", "Definition name.", required=True),
               Param("scope", "string", "system or workspace (default: the effective one).",
                     enum=SCOPES),
           ), "agents delete", read_only=False, destructive=True, in_run=False),
)

BY_NAME = {a.name: a for a in ACTIONS}
RUN_ACTIONS = tuple(a for a in ACTIONS if a.in_run)
