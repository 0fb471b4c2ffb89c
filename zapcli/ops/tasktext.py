"""A task and other user text as zapcli records them: UTF-8, at most 1 MB
for a task (docs/explanation/rules.md#commands spawn), without a NUL byte. Imports `zapcli.errors`."""

from __future__ import annotations

from zapcli.errors import UsageError

MAX_TASK_BYTES = 1024 * 1024


def argv_text(text: str) -> str:
    """Text as the user typed it: under a non-UTF-8 locale (LC_ALL=C) Python
    turns argv's UTF-8 bytes into surrogate escapes; those bytes are what was
    typed, so they are decoded as UTF-8 (#12.8). Other text is unchanged."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return text  # really not UTF-8: refused below


def require_utf8(what: str, text: str | None) -> None:
    """Everything a trail records is UTF-8 text: a value that is not (a folder
    name of other bytes, say) is refused by name, not met as a traceback."""
    if text is None:
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8 ({text.encode('utf-8', 'surrogateescape')!r}); "
                         "zapcli records it as UTF-8 text: use a UTF-8 name") from None


def decode_task(raw: bytes) -> str:
    """Task bytes (from stdin, read up to one byte past the limit) to text:
    UTF-8, at most 1 MB. Raises UsageError."""
    if len(raw) > MAX_TASK_BYTES:
        raise UsageError(f"task on stdin is more than {MAX_TASK_BYTES:,} bytes, the limit (1 MB); "
                         "put the material in a file and name the file in the task")
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")  # a BOM is not part of the task
    except UnicodeDecodeError as exc:
        raise UsageError(f"task is not valid UTF-8 (byte {exc.start}); pass UTF-8 text") from None


def refuse_nul(task: str) -> None:
    """A task holding a NUL byte is refused: the trail would record it as
    given while `sh -c`, an agent CLI's argv or a C library would see only
    the text before it — it would run as something other than what was
    recorded."""
    at = task.find("\0")
    if at >= 0:
        raise UsageError(f"the task holds a NUL byte (character {at + 1} of {len(task)}): a "
                         "command would see only the text before it. Remove it (e.g. tr -d "
                         "'\\000') and spawn again")
