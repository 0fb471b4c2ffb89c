"""The one user-facing error family; owns exit codes. Imports nothing of zapcli.

Every error a user can cause is a `ZapcliError` with a stable `code`, a message
that names the id, file or key involved and says what to do, and the process
exit code (docs/explanation/rules.md#commands: 1 operation failed, 2 usage error). The catch-all that
turns them into one stderr line lives only at the CLI edge and the child's main.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_WAIT_NOT_COMPLETED = 3  # `wait`: some awaited subagent ended otherwise
EXIT_WAIT_TIMEOUT = 4  # `wait`: the wait itself timed out


_MARK = "\x1f"  # around a parameter name inside a message (see `param`)
FLAG_NAMES = {"all_": "all", "any_": "any", "as_": "as", "timeout_s": "timeout", "grace_s": "grace"}
# The CLI flags a tool call takes as a parameter of the same name (`--max-tokens`
# is `max_tokens`): a message worded for the CLI names them as parameters when a
# tool reads it (`for_tool`). tests/toolapi/test_agreement.py holds it to the
# declaration (zapcli.toolapi.spec); a flag not here (`--no-sandbox`) is a
# person's, and a command line (`zapcli worktree rm --force`, `git ...`) stays as written.
TOOL_FLAGS = frozenset((
    "after", "agent", "all", "any", "approval", "attempt-cli", "attempt-model", "attempts",
    "check", "cli", "cwd", "force", "grace", "max-cost", "max-tokens", "model", "name-only",
    "no-wait", "output-schema", "rebase", "reason", "since", "squash", "stat", "status",
    "scope", "stderr", "timeout", "unattended", "wait-secs", "worktree"))
_FLAG_VALUES = ("full", "auto-edit", "workspace", "confirm", "sh")  # said with their flag


def param(name: str) -> str:
    """A parameter named in an error message. Ops name parameters, not
    flags: the CLI shows `param("wait_secs")` as `--wait-secs`, a tool that
    takes JSON arguments (the subagent tool, MCP) as `wait_secs`."""
    return f"{_MARK}{name}{_MARK}"


_ALT, _OR = "\x1e", "\x1d"


def either(cli: str, tool: str) -> str:
    """Words that differ between the CLI (`cli`) and a tool call (`tool`)."""
    return f"{_ALT}{cli}{_OR}{tool}{_ALT}"


def _as_params(text: str) -> str:
    """`text` with each CLI flag of `TOOL_FLAGS` as the tool's parameter:
    `--worktree` -> `worktree`, `--approval full` -> `approval: "full"`;
    except in a command line a person runs (`zapcli ...` or `git ...` in the same clause)."""
    if "--" not in text:
        return text
    import re

    def one(m: re.Match[str]) -> str:
        flag, value = m.group(1), m.group(2)
        clause = re.split(r"[(),;:`]|\. ", text[:m.start()])[-1]
        if flag not in TOOL_FLAGS or re.search(r"\b(zapcli|git) ", clause):
            return m.group(0)
        name = flag.replace("-", "_")
        return f'`{name}: "{value}"`' if value else f"`{name}`"

    values = "|".join(_FLAG_VALUES)
    return re.sub(rf"(?<![\w`-])--([a-z][a-z0-9-]*)(?: ({values})(?![\w-]))?", one, text)


def _spell(template: str, style: str) -> str:
    if style != "flag":
        return _as_params(_spelled(template, style))
    return _spelled(template, style)


def _spelled(template: str, style: str) -> str:
    if _ALT in template:
        parts = template.split(_ALT)
        for i in range(1, len(parts), 2):
            cli, _, tool = parts[i].partition(_OR)
            parts[i] = cli if style == "flag" else tool
        template = "".join(parts)
    if _MARK not in template:
        return template
    parts = template.split(_MARK)
    for i in range(1, len(parts), 2):
        name = FLAG_NAMES.get(parts[i], parts[i])
        parts[i] = "--" + name.replace("_", "-") if style == "flag" else f"`{name}`"
    return "".join(parts)


class ZapcliError(Exception):
    """A failure the user can act on. `code` is stable; `exit_code` is 1 or 2.

    `message` spells parameters as CLI flags; `for_tool()` as the parameter
    names a tool call uses."""

    code = "error"
    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, code: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.template = message
        if code is not None:
            self.code = code
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return _spell(self.template, "flag")

    def for_tool(self) -> str:
        return _spell(self.template, "param")

    def __str__(self) -> str:
        return self.message


class UsageError(ZapcliError):
    """Bad arguments: exit 2."""

    code = "usage"
    exit_code = EXIT_USAGE


class ConfigError(ZapcliError):
    """An invalid config file, reported with file, line and key."""

    code = "config"


class StateError(ZapcliError):
    """The state directory cannot be created or written."""

    code = "state"


class NotFound(ZapcliError):
    """An id that does not exist (or is not a valid id at all)."""

    code = "not_found"


class Damaged(NotFound):
    """A trail that exists but cannot be read as a subagent (no `spawn` record)."""

    code = "damaged"
