"""The console-script entry point: fast path first, typer for the rest.

Imports `zapcli.lean` (first: pathlib as a hot command needs it), `zapcli.cli.lifespan` (whether this command seals its process),
`zapcli.cli.fastpath`, `zapcli.cli.output`, `zapcli.errors`, `zapcli.cli.helptext`
(`--help` to a pipe); typer only when the fast path declines. The one
catch-all that turns a ZapcliError into a clear stderr line and its exit code
lives here: a user mistake never shows a traceback. The hot commands a fleet
pays once per subagent end their process without the interpreter's tear-down
when nothing is left for it to do (`_leave`).
"""

from __future__ import annotations

import sys

ON_EVERY_COMMAND = ("--json",)  # given before the command, it means the same after it
GROUPS = ("agents", "board", "mcp", "trace", "worktree")  # a command of these is two words


def after_the_command(args: list[str]) -> list[str]:
    """`zapcli --json list` is `zapcli list --json`: an option every command
    takes, given before the command, goes right after the command's name
    (never to the end, where it could land after `--`, in a task)."""
    lead = 0
    while lead < len(args) and args[lead] in ON_EVERY_COMMAND:
        lead += 1
    rest = args[lead:]
    if not lead:
        return args
    if not rest or rest[0] in ("--help", "-h", "--version"):
        return rest  # what those print has no JSON form
    if rest[0].startswith("-"):
        return args  # typer says what is wrong
    words = 2 if rest[0] in GROUPS and len(rest) > 1 and not rest[1].startswith("-") else 1
    return rest[:words] + args[:lead] + rest[words:]


def _answered(args: list[str]) -> bool:
    """`--version`, and `--help` to a pipe: typer's own answers, printed
    without importing typer (~10x a bare start; with rich's rendering ~15x)."""
    if args == ["--version"]:
        from zapcli import __version__

        sys.stdout.write(f"zapcli {__version__}\n")
        return True
    if args in (["--help"], ["-h"]):
        from zapcli.cli import helptext

        return helptext.printed()
    return False


def _lean() -> None:
    """pathlib without what it binds for later (`zapcli.lean`), before anything imports it."""
    from zapcli import lean

    lean.pathlib_alone()


def main(argv: list[str] | None = None) -> int:
    args = after_the_command(sys.argv[1:] if argv is None else argv)
    if _answered(args):
        return 0
    _lean()
    if argv is None:  # a process of its own: one that may wait keeps its keys out of reach
        from zapcli.cli.lifespan import seals

        if seals(args):
            from zapcli import keyguard

            keyguard.seal()
    _standard_streams()
    from zapcli.paths import own_lookups

    own_lookups()  # no program of its own is found in a folder a subagent wrote
    from zapcli.errors import ZapcliError

    try:
        if args[:1] == ["__complete"] and len(args) == 2:  # what the completion scripts ask
            from zapcli.cli.completion import answer

            return answer(args[1])
        code = _fast(args)
        if code is not None:
            if argv is None and _leaves_at_once(args):
                _leave(code)
            return code
        import typer

        from zapcli.cli.app import app

        try:
            result = app(args=args, prog_name="zapcli", standalone_mode=False)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except typer.Abort:  # Ctrl-C inside a prompt
            raise KeyboardInterrupt from None
        except typer.TyperException as exc:  # a usage error found by the parser
            if not _message(exc).strip():  # bare `zapcli` / `zapcli agents`: the help was the answer
                return getattr(exc, "exit_code", 2)
            raise _usage_error(exc, args) from None
        return result if isinstance(result, int) else 0
    except ZapcliError as exc:
        from zapcli.cli.output import emit_json, error
        from zapcli.render.docschema import error_doc

        error(exc.message)
        if "--json" in args and exc.code != "stdout":  # scripts piping to jq still get one document
            try:
                emit_json(error_doc(exc.code, exc.message, exc.exit_code))
            except (ZapcliError, OSError):  # stdout is gone too: the stderr line has it
                pass
        return exc.exit_code
    except BrokenPipeError:  # `zapcli … | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # an environment problem (full disk, a file in the way): one line
        from zapcli.cli.output import emit_json, error
        from zapcli.render.docschema import error_doc

        kind, message = _os_error(exc)
        error(message)
        if "--json" in args:  # as for every other error: one document on stdout
            try:
                emit_json(error_doc(kind, message, 1))
            except (ZapcliError, OSError):
                pass
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("zapcli: interrupted\n")
        if "--json" in args:  # a reader of stdout still gets one document
            from zapcli.cli.output import emit_json
            from zapcli.render.docschema import error_doc

            emit_json(error_doc("interrupted", "interrupted (Ctrl-C); subagents keep running",
                                130))
        return 130


def _fast(args: list[str]) -> int | None:
    """A subagent's runner, as `spawn` and the queue start it (`run --subagent
    --id ID`, nothing else), without the command-line table: it holds every
    command's options, and a runner keeps what it imports for its whole run.
    Any other command line: the fast path's answer, None when typer parses it."""
    if len(args) != 4 or args[:3] != ["run", "--subagent", "--id"] or not args[3] \
            or args[3].startswith("-"):
        from zapcli.cli import fastpath

        return fastpath.run(args)
    from zapcli.paths import restore_module_path

    restore_module_path()  # started without the caller's relative PYTHONPATH: its work gets it back
    from zapcli.runner.main import main

    return main(args[3])


# The hot commands (and a subagent's runner) a fleet pays once per subagent,
# and `merge` (issue 32: held to git's own merge time): their process ends
# without the interpreter's tear-down (freeing every module's objects one by
# one costs about a sixth of `spawn`'s time).
LEAVE_AT_ONCE = frozenset({"spawn", "poll", "list", "wait", "kill", "merge"})


def _leaves_at_once(args: list[str]) -> bool:
    return bool(args) and (args[0] in LEAVE_AT_ONCE or args[:2] == ["run", "--subagent"])


def _the_program() -> bool:
    """True when zapcli is this process's program: `python -m zapcli` or the
    installed `zapcli` script — not `main()` called from other Python code."""
    import os

    here = sys.modules.get("__main__")
    spec = getattr(here, "__spec__", None)
    if spec is not None and str(getattr(spec, "name", "")).startswith("zapcli"):
        return True
    return os.path.basename(str(getattr(here, "__file__", "") or "")) == "zapcli"


def _leave(code: int) -> None:
    """End this process now with `code`, skipping the interpreter's tear-down,
    when nothing is left for it to do: stdout and stderr flushed, no `atexit`
    callback (a coverage or telemetry hook), no thread that is not a daemon
    (nor one of threading's exit hooks), no profiler or tracer. Otherwise
    returns, and the process ends the ordinary way. What this process wrote
    to files went through os-level writes or closed files: nothing is buffered."""
    import atexit
    import os

    if atexit._ncallbacks() or sys.getprofile() is not None or sys.gettrace() is not None:
        return
    if not _the_program():  # main() called by other code (a test, an embedding): it goes on
        return
    threading = sys.modules.get("threading")
    if threading is not None:
        if getattr(threading, "_threading_atexits", None):
            return
        main = threading.main_thread()
        if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
            return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # a reader that left: the ordinary ending reports it as usual
        return
    os._exit(code if isinstance(code, int) and 0 <= code <= 255 else 1)


def _message(exc: Exception) -> str:
    return exc.format_message() if hasattr(exc, "format_message") else str(exc)


# What people type first, from other tools, and the command that does it here.
LIKELY = {"status": "poll (one subagent) or list", "ps": "list", "ls": "list", "logs": "output",
          "log": "output or replay", "show": "replay", "stop": "kill", "cancel": "kill",
          "start": "spawn", "new": "spawn", "remove": "rm", "delete": "rm", "prune": "clean",
          "attach": "output --follow or top", "tail": "output --follow", "version": "--version",
          "tui": "top", "ui": "top", "dashboard": "top", "htop": "top", "watch": "top or list --watch"}


def _did_you_mean(message: str, ctx: object) -> str:
    """"; did you mean …?" for an unknown command."""
    import difflib
    import re

    m = re.search(r"No such command '([^']*)'", message)
    if not m or "did you mean" in message.lower():
        return ""
    typed = m.group(1).lower()
    names = sorted(getattr(getattr(ctx, "command", None), "commands", {}) or {})
    alias = difflib.get_close_matches(typed, list(LIKELY), 1, 0.7)
    hint = (LIKELY[alias[0]] if alias else "") or ", ".join(difflib.get_close_matches(typed, names, 2, 0.6))
    return f"; did you mean {hint}?" if hint else ""


def _closer_options(exc: Exception) -> None:
    """Keep of an unknown option's suggestions (click's `possibilities`) only
    those whose names look like it: click compares them dashes and all, and
    every long option starts with `--` (`list --bogus` was offered --long)."""
    import difflib

    offered, typed = getattr(exc, "possibilities", None), getattr(exc, "option_name", None)
    if not offered or not isinstance(typed, str):
        return
    name = typed.split("=", 1)[0].lstrip("-").lower()
    exc.possibilities = [p for p in offered  # type: ignore[attr-defined]
                         if difflib.get_close_matches(name, [p.lstrip("-").lower()], 1, 0.6)]


def _usage_error(exc: Exception, args: list[str]) -> Exception:
    """The parser's complaint as a UsageError (exit 2): one line with where to
    look, and with `--json` a document too, like every other error."""
    from zapcli.errors import UsageError

    _closer_options(exc)
    message = _not_a_number(exc, args) or _message(exc)
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "zapcli"
    message = message.rstrip(".") + _did_you_mean(message, ctx)
    if args[:1] in (["spawn"], ["run"]):
        message += _spawn_hint(message, args)
    return UsageError(f"{message.rstrip('.')} (see {path} --help)")


def _not_a_number(exc: Exception, args: list[str]) -> str | None:
    """A number option given something else, in words (typer's checker said
    "Input should be a valid number, unable to parse string as a number")."""
    param, said = getattr(exc, "param", None), _message(exc)
    if param is None or not ("valid number" in said or "valid integer" in said):
        return None
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")] or [str(param.name)]
    typed = None
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in opts:
            typed = value if eq else (args[i + 1] if i + 1 < len(args) else None)
    kind = "a whole number" if "valid integer" in said else "a number"
    if getattr(param, "metavar", None) == "SECS":
        kind += " of seconds"
    return f"{opts[0]} wants {kind}" + (f", not {typed!r}" if typed is not None else "")


def _spawn_hint(message: str, args: list[str]) -> str:
    """The fix for a task the parser split (#14.3): options after `--` are
    part of the task; an unquoted task's `-x` words look like options."""
    if "unexpected extra argument" in message:
        if "--" in args and any(a.startswith("-") for a in args[args.index("--") + 1:]):
            return ("; everything after -- is the task: put options (like --json) before --, "
                    "and quote the task as one argument, e.g. zapcli spawn --json -- 'echo hi'")
        return "; quote the whole task as one argument, e.g. zapcli spawn -- 'echo hi there'"
    if "No such option" in message and "--" not in args:
        return ("; if it belongs to the task, end the options with -- and quote the task, "
                "e.g. zapcli spawn --cli sh -- 'ls -la'")
    return ""


def _os_error(exc: OSError) -> tuple[str, str]:
    """(code, one line) for an OSError that reached the top: a state folder
    that cannot be written (read-only, not ours) or is full is named as such,
    in doctor's words; anything else says where it happened."""
    import errno
    import os

    name = str(getattr(exc, "filename", None) or "")
    where = f" ({name})" if name else ""
    try:
        from zapcli.paths import state_dir

        home = str(state_dir())
    except Exception:  # noqa: BLE001 - the message must not fail
        home = ""
    if home and (name == home or name.startswith(home + os.sep)):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return "state", (f"the state folder {home} is full ({exc.strerror}{where}): free some "
                             "space there or set ZAPCLI_HOME to a folder on another disk")
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return "state", (f"the state folder {home} cannot be written ({exc.strerror}{where}); "
                             "zapcli keeps every subagent's trail there: make it writable or set "
                             "ZAPCLI_HOME to a writable folder")
    return "error", f"{exc.strerror or exc}{where}; check ZAPCLI_HOME and the folders zapcli uses"


def _standard_streams() -> None:
    """Started with stdin, stdout or stderr closed (`zapcli … >&-`): put
    /dev/null in their place, so output goes nowhere instead of crashing, and
    no file zapcli opens can land on fd 0-2 and receive another's writes."""
    import os

    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            got = os.open(os.devnull, os.O_RDWR)
            if got != fd:  # a lower one was also closed and took it; the loop fills in order
                os.dup2(got, fd)
                os.close(got)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))
