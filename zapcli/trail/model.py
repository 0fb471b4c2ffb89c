"""The trail's typed model: statuses, the records status is derived from
(`spawn`, `process`, `start`, the final `status`), outcomes, corrupt lines.

Imports only `zapcli.plain`. The file format is docs/explanation/rules.md#the-trail's; these types
are how code reads it. Each record's `from_record` is the one place that
knows its defaults, and it never raises: a damaged field falls back to its
default, so a bad trail affects only its own answer. Whether a status is
terminal is asked here (`Status.terminal`, `is_terminal`), never by
comparing strings elsewhere (tests/test_architecture.py).
"""

from __future__ import annotations

from zapcli.plain import field, frozen

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, ClassVar


class _Statuses(type):
    """`Status`'s own type: its statuses in order (`list(Status)`, `len(Status)`), as an Enum's."""

    def __iter__(cls) -> Iterator[Status]:
        return iter(_MEMBERS.values())

    def __len__(cls) -> int:
        return len(_MEMBERS)


class Status(str, metaclass=_Statuses):
    """A subagent's status: one of a fixed set of strings (`Status.QUEUED` ...
    `Status.INTERRUPTED`), each a single instance. It is a str, so it
    compares, hashes, formats and serializes as its value, and views, JSON
    documents and lookups keyed by plain strings all agree. `Status(text)`
    gives the one of that value, and raises ValueError for any other text.
    (Not an Enum: `enum` costs ~1 ms of every command's start.)"""

    __slots__ = ()

    QUEUED: ClassVar[Status]
    RUNNING: ClassVar[Status]
    AWAITING_APPROVAL: ClassVar[Status]
    COMPLETED: ClassVar[Status]
    FAILED: ClassVar[Status]
    TIMEOUT: ClassVar[Status]
    CANCELLED: ClassVar[Status]
    LOST: ClassVar[Status]
    INTERRUPTED: ClassVar[Status]

    def __new__(cls, value: object) -> Status:
        member = _MEMBERS.get(value) if isinstance(value, str) else None
        if member is None:
            raise ValueError(f"{value!r} is not a valid Status")
        return member

    def __repr__(self) -> str:
        return f"<Status.{self.upper()}: {str.__repr__(self)}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return Status, (str(self),)

    @property
    def value(self) -> str:
        return str(self)

    @property
    def name(self) -> str:
        return self.upper()

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @property
    def live(self) -> bool:
        """Its runner has started and not ended: running or awaiting approval."""
        return self in LIVE

    @classmethod
    def parse(cls, value: object) -> Status | None:
        """The Status named `value`, or None for anything else."""
        return _MEMBERS.get(value) if isinstance(value, str) else None


TERMINAL = frozenset({"completed", "failed", "timeout", "cancelled", "lost", "interrupted"})
NON_TERMINAL = ("queued", "running", "awaiting_approval")
LIVE = frozenset({"running", "awaiting_approval"})
ALL = NON_TERMINAL + ("completed", "failed", "timeout", "cancelled", "lost", "interrupted")
_MEMBERS: dict[str, Status] = {value: str.__new__(Status, value) for value in ALL}
for _value, _member in _MEMBERS.items():
    setattr(Status, _value.upper(), _member)
del _value, _member


# an on-finish command's or event hook's claim whose helper has started (`running`) or ended
HELPER_STATES = frozenset({"running", "done"})


def is_terminal(status: object) -> bool:
    return isinstance(status, str) and status in TERMINAL


@frozen
class Outcome:
    """How a subagent ended, as its runner (or whoever ends it) records it."""

    status: Status
    exit_code: int | None = None
    reason: str | None = None
    report: str | None = None  # the final answer, when the backend decided it (agent CLIs)
    # more fields for the terminal `status` record (`usage_limit`: the account's limit it met)
    extra: dict[str, Any] | None = None


DEFAULT_TIMEOUT_S = 300.0
DEFAULT_KILL_GRACE_S = 3.0
DEFAULT_APPROVAL = "workspace"
DEFAULT_EXECUTOR = "local"
# why a subagent ended `cancelled` when its runner was sent SIGTERM by someone
# else (a backend adds what became of its work)
SIGTERM_REASON = "its runner got SIGTERM (not from zapcli kill)"


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _num(value: Any, default: float, *, zero_ok: bool = False) -> float:
    """A finite positive number (or 0 with `zero_ok`), else `default`."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return default
    ok = (value >= 0 if zero_ok else value > 0) and value != float("inf")
    return float(value) if ok else default  # NaN fails both comparisons


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(x for x in value if isinstance(x, str)) if isinstance(value, list) else ()


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


@frozen
class SpawnRecord:
    """The frozen `spawn` record: what the subagent is, decided at spawn time.

    `raw` is the record itself, for fields only one backend knows."""

    session: str
    cli: str
    task: str
    created: str  # the record's `ts`
    cwd: str
    workspace: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    kill_grace_s: float = DEFAULT_KILL_GRACE_S
    approval: str = DEFAULT_APPROVAL
    unattended: bool = False
    agent: str | None = None
    model: str | None = None
    max_tokens: int | None = None
    max_concurrent: int | None = None  # None: the observer's setting applies
    after: tuple[str, ...] = ()
    writable_roots: tuple[str, ...] = ()
    executor: str = DEFAULT_EXECUTOR
    definition: dict[str, Any] | None = None
    grant: dict[str, Any] | None = None
    diagnostics: tuple[dict[str, Any], ...] = ()
    backend: dict[str, Any] | None = None  # an agent CLI: {name, command, format} (docs/explanation/rules.md#agent-clis)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> SpawnRecord:
        """Read a `spawn` record; every damaged or missing field takes its default."""
        max_tokens = rec.get("max_tokens")
        cap = rec.get("max_concurrent")
        workspace = _str(rec.get("workspace")) or "/"
        diagnostics = rec.get("diagnostics")
        return cls(
            session=_str(rec.get("session")), cli=_str(rec.get("cli")),
            task=_str(rec.get("task")), created=_str(rec.get("ts")),
            cwd=_str(rec.get("cwd")) or workspace, workspace=workspace,
            timeout_s=_num(rec.get("timeout_s"), DEFAULT_TIMEOUT_S),
            kill_grace_s=_num(rec.get("kill_grace_s"), DEFAULT_KILL_GRACE_S, zero_ok=True),
            approval=_str(rec.get("approval")) or DEFAULT_APPROVAL,
            unattended=rec.get("unattended") is True,
            agent=_opt_str(rec.get("agent")), model=_opt_str(rec.get("model")),
            max_tokens=max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool)
            else None,
            max_concurrent=cap if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 0
            else None,
            after=_strs(rec.get("after")), writable_roots=_strs(rec.get("writable_roots")),
            executor=_str(rec.get("executor")) or DEFAULT_EXECUTOR,
            definition=_dict(rec.get("definition")), grant=_dict(rec.get("grant")),
            diagnostics=tuple(d for d in diagnostics if isinstance(d, dict))
            if isinstance(diagnostics, list) else (),
            backend=_dict(rec.get("backend")),
            raw=rec,
        )

    # docs/explanation/rules.md#parallel-coding fields, read from the record as written (absent on older trails)
    @property
    def worktree(self) -> dict[str, Any] | None:
        """The tree receipt of a `--worktree` subagent (repo, common_dir, path,
        branch, base, subdir; `carried` for a continued one)."""
        return _dict(self.raw.get("worktree"))

    @property
    def on_finish(self) -> str | None:
        return _opt_str(self.raw.get("on_finish")) or None

    @property
    def hooks(self) -> dict[str, str]:
        """Event name -> shell command (`hooks:` in the user's config, `spawn
        --on-event`), frozen at spawn; `finished` is `on_finish`."""
        found = self.raw.get("hooks")
        if not isinstance(found, dict):
            return {}
        return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str) and v.strip()}

    @property
    def output_schema(self) -> Any:
        """The JSON Schema of `--output-schema` (an object or a boolean), or None."""
        return self.raw.get("output_schema")

    @property
    def relay(self) -> dict[str, Any] | None:
        """`{pid, create_time, host}` of the `zapcli run` that asks a person about
        this subagent's approvals (a run with a terminal), or None."""
        return _dict(self.raw.get("relay"))

    @property
    def continue_of(self) -> str | None:
        """The subagent this one continues (`zapcli continue`)."""
        return _opt_str(self.raw.get("continue_of"))

    @property
    def granted_tools(self) -> list[str]:
        tools = (self.grant or {}).get("tools")
        return [t for t in tools if isinstance(t, str)] if isinstance(tools, list) else []


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@frozen
class RunnerRecord:
    """What a `process` or `start` record says of the runner: the fields
    every executor's record has. `raw` is the record itself; its other
    fields (a job id, a pid namespace) are its executor's, which reads them
    from `raw`. A pid that is no positive number is None (never signalled)."""

    pid: int | None = None
    create_time: float | None = None
    mono: float | None = None  # monotonic clock at its launch (process) or start (start)
    deadline_mono: float | None = None
    ts: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def _fields(rec: dict[str, Any]) -> dict[str, Any]:
        pid = _opt_int(rec.get("pid"))
        return {"pid": pid if pid is not None and pid > 0 else None,
                "create_time": _opt_num(rec.get("create_time")), "mono": _opt_num(rec.get("mono")),
                "deadline_mono": _opt_num(rec.get("deadline_mono")), "ts": _opt_str(rec.get("ts")),
                "raw": rec}


@frozen
class ProcessRecord(RunnerRecord):
    """The `process` record: how its executor launched the runner (written
    by whoever launched it: a spawn or a queue drain)."""

    deadline: str | None = None  # the deadline as a time of day (ISO-8601 UTC)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> ProcessRecord:
        return cls(**cls._fields(rec), deadline=_opt_str(rec.get("deadline")))


@frozen
class StartRecord(RunnerRecord):
    """The `start` record: the runner's own word that it started (the one
    to go by when the launcher died before writing `process`)."""

    definition: dict[str, Any] | None = None
    tools: tuple[str, ...] = ()
    diagnostics: int = 0

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> StartRecord:
        count = _opt_int(rec.get("diagnostics"))
        return cls(**cls._fields(rec), definition=_dict(rec.get("definition")),
                   tools=_strs(rec.get("tools")), diagnostics=count if count and count > 0 else 0)


@frozen
class FinalStatus:
    """The final `status` record: the first terminal one (docs/explanation/rules.md#the-trail), how the
    subagent ended. `raw` is the record itself (what a remote runner is
    handed, and fields only its writer knows)."""

    status: Status
    exit_code: int | None = None
    reason: str | None = None
    ts: str | None = None
    mono: float | None = None  # the writer's monotonic clock (another boot's after a reboot)
    by: str | None = None  # who ended it, when not its runner: "kill", "observer", ...
    grace_s: float | None = None  # the grace `zapcli kill --grace` asked for
    stdout_bytes: int | None = None
    stderr_bytes: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> FinalStatus | None:
        """None when `rec` is no terminal `status` record."""
        status = Status.parse(rec.get("status")) if rec.get("type") == "status" else None
        if status is None or not status.terminal:
            return None
        return cls(status, exit_code=_opt_int(rec.get("exit_code")), reason=_opt_str(rec.get("reason")),
                   ts=_opt_str(rec.get("ts")), mono=_opt_num(rec.get("mono")),
                   by=_opt_str(rec.get("by")), grace_s=_opt_num(rec.get("grace_s")),
                   stdout_bytes=_opt_int(rec.get("stdout_bytes")),
                   stderr_bytes=_opt_int(rec.get("stderr_bytes")), raw=rec)

    @property
    def outcome(self) -> Outcome:
        return Outcome(self.status, self.exit_code, self.reason)


@frozen
class Corrupt:
    """A line of a trail that is no record: its line number (0: the unread
    middle of an oversized trail) and its first 200 characters, or what was
    left out."""

    line: int
    text: str
