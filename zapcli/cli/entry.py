"""The console-script entry point: fast path first, typer for the rest.

Imports `zapcli.cli.fastpath`, `zapcli.cli.output`, `zapcli.errors`; typer only
when the fast path declines. The one catch-all that turns a ZapcliError into a
clear stderr line and its exit code lives here: a user mistake never shows a
traceback.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    _standard_streams()
    from zapcli.errors import ZapcliError

    try:
        from zapcli.cli import fastpath

        code = fastpath.run(args)
        if code is not None:
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
            raise _usage_error(exc, args) from None
        return result if isinstance(result, int) else 0
    except ZapcliError as exc:
        from zapcli.cli.output import emit_json, error

        error(exc.message)
        if "--json" in args and exc.code != "stdout":  # scripts piping to jq still get one document
            try:
                emit_json({"error": {"code": exc.code, "message": exc.message,
                                     "exit_code": exc.exit_code}})
            except (ZapcliError, OSError):  # stdout is gone too: the stderr line has it
                pass
        return exc.exit_code
    except BrokenPipeError:  # `zapcli … | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # an environment problem (full disk, a file in the way): one line
        from zapcli.cli.output import error

        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        error(f"{exc.strerror or exc}{where}; check ZAPCLI_HOME and the folders zapcli uses")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("zapcli: interrupted\n")
        if "--json" in args:  # a reader of stdout still gets one document
            from zapcli.cli.output import emit_json

            emit_json({"error": {"code": "interrupted", "message": "interrupted (Ctrl-C); "
                                 "subagents keep running", "exit_code": 130}})
        return 130


def _usage_error(exc: Exception, args: list[str]) -> Exception:
    """The parser's complaint as a UsageError (exit 2): one line with where to
    look, and with `--json` a document too, like every other error."""
    from zapcli.errors import UsageError

    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "zapcli"
    if "unexpected extra argument" in message and args[:1] in (["spawn"], ["run"]):
        message += "; quote the whole task as one argument, e.g. zapcli spawn -- 'echo hi there'"
    return UsageError(f"{message.rstrip('.')} (see {path} --help)")


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
