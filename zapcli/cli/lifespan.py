"""Which command lines seal their process (`zapcli.keyguard.seal`: no key in
its environment block, non-dumpable) before anything else runs: the one
place every long-lived zapcli command passes through (`zapcli.cli.entry`).

Imports only `re`, lazily (it decides on every command line, the hot ones
included).

Sealed is the default: a command waits for something — its subagents, a
person, an MCP client, a lock, the network, another program — for longer
than a tool needs to read /proc/<pid>/environ, so any command not named here
is sealed, and a new one is sealed without anyone remembering to. The only
forms left unsealed are the short ones on the measured hot path, which
answer at once and whose start-up cost is counted (sealing loads ctypes):
`spawn`, `poll --no-wait`, `list` (not `--watch`), `session`,
`tool-schema`, a `call` of an action that answers at once, and the board's
verbs but a `claim --wait`. `tests/redteam/test_keys.py` checks this against
every command and option the CLI has.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# `call` actions that answer at once (the others wait: poll, wait, kill's
# grace, an attempts check, a merge's question)
QUICK_CALLS = frozenset({"spawn", "list", "output", "replay", "send", "approve", "deny", "agents",
                         "usage", "agents_save", "agents_delete", "diff"})
ALWAYS_SHORT = ("", "-h", "--help", "--version", "__complete")


def _given(args: list[str], *flags: str) -> bool:
    """Whether any of `flags` is among `args`: `--wait`, `--wait=5`, and a
    one-letter flag inside a cluster such as `-lw`."""
    for arg in args:
        for flag in flags:
            if arg == flag or (flag.startswith("--") and arg.startswith(flag + "=")):
                return True
            if len(flag) == 2 and arg[:1] == "-" and arg[1:2] != "-" and flag[1] in arg[1:]:
                return True
    return False


def _call_is_quick(args: list[str]) -> bool:
    """A `call` whose one document (not stdin) names one quick action."""
    docs = [a for a in args if not a.startswith("--")]
    if len(docs) != 1 or docs[0] == "-":
        return False  # stdin (unseen), or nothing: it may wait
    import re

    actions = re.findall(r'"action"\s*:\s*"([a-z_]+)"', docs[0])
    return len(actions) == 1 and actions[0] in QUICK_CALLS


# command (its first word) -> whether this line of it stays short
SHORT_COMMANDS: dict[str, Callable[[list[str]], bool]] = {
    "spawn": lambda args: True,
    "poll": lambda args: _given(args, "--no-wait"),
    "list": lambda args: not _given(args, "--watch", "-w"),
    "session": lambda args: True,
    "tool-schema": lambda args: True,
    "call": _call_is_quick,
    "board": lambda args: args[:1] in (["add"], ["list"], ["done"], ["release"], ["show"])
    or (args[:1] == ["claim"] and not _given(args, "--wait")),
}


def seals(args: list[str]) -> bool:
    """Whether the command line `args` (without the program name) seals its
    process first. Everything after `--` is a task, never an option."""
    head = args[: args.index("--")] if "--" in args else args
    cmd = head[0] if head else ""
    if cmd in ALWAYS_SHORT or "--help" in head or "-h" in head:  # it prints its help
        return False
    short = SHORT_COMMANDS.get(cmd)
    return short is None or not short(head[1:])
