"""The one user-facing error family; owns exit codes. Imports nothing of zapcli.

Every error a user can cause is a `ZapcliError` with a stable `code`, a message
that names the id, file or key involved and says what to do, and the process
exit code (SPEC §3: 1 operation failed, 2 usage error). The catch-all that
turns them into one stderr line lives only at the CLI edge and the child's main.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_WAIT_NOT_COMPLETED = 3  # `wait`: some awaited subagent ended otherwise
EXIT_WAIT_TIMEOUT = 4  # `wait`: the wait itself timed out


class ZapcliError(Exception):
    """A failure the user can act on. `code` is stable; `exit_code` is 1 or 2."""

    code = "error"
    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, code: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if exit_code is not None:
            self.exit_code = exit_code


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
