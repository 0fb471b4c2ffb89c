"""The executor seam: check, launch, alive, signal, collect, deliver.

Imports `zapcli.errors` and the standard library. An executor starts the
runner of one subagent (`zapcli run --subagent --id ID`) somewhere and answers
later questions about it from the facts its `launch` recorded in the
`process` record: is it alive, stop it, bring its records and output home,
and hand it records the caller wrote for it (`send`, `approve`, `deny`).

A local runner shares this machine's state folder, so `collect` and
`deliver` have nothing to do; a remote one (`remote = True`) keeps its files
on its node, and the observer collects before it derives a status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from zapcli.errors import ZapcliError
from zapcli.plain import field, frozen, plain

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


class ExecutorError(ZapcliError):
    """The executor cannot be used now (its cluster is unreachable, refused
    the job, is not configured): one line, exit 1."""

    code = "executor"


@frozen
class Launched:
    """What `launch` found out, for the `process` record: local, `pid` and
    `create_time`; a cluster, its job id and address."""

    fields: dict[str, Any]


@frozen
class Liveness:
    """`alive` True/False, or None when it cannot be told now (the cluster is
    unreachable); `reason` says why it is dead or unknown. `queued`: it was
    handed over, but its executor has not started it yet (a cluster that
    has no room for it now), in the executor's words, e.g. `ray: placement
    pending 45s`: the subagent shows as queued, saying so."""

    alive: bool | None
    reason: str | None = None
    queued: str | None = None


@plain
class Signalled:
    """What `signal` did: process ids (or job ids) terminated and killed."""

    termed: list[Any] = field(default_factory=list)
    killed: list[Any] = field(default_factory=list)
    root_alive: bool = False  # the runner itself was still alive when signalled
    how: str | None = None  # a remote executor's words for it, e.g. "job stopped"


@plain
class Collected:
    """What one `collect` brought home. `ended`: the runner's side said it
    shipped everything it will ever ship (nothing more to fetch)."""

    records: int = 0
    out_bytes: int = 0
    err_bytes: int = 0
    ended: bool = False


class Executor:
    name: str = ""
    summary: str = ""  # one line: where it runs
    remote: bool = False  # the runner keeps its files elsewhere: collect before deriving
    # a remote runner's end reaches this machine's trail only when an observer
    # looks (collects): a waiter on one looks at least this often (None: the
    # trail itself wakes it)
    look_every_s: float | None = None
    config_keys: tuple[str, ...] = ()  # the keys of its config.yaml section, named after it

    def check_config(self, value: Any) -> dict[str, Any]:
        """Its config.yaml section, validated; raises ValueError saying what is
        wrong. Only called for an executor with `config_keys`."""
        if not isinstance(value, dict):
            raise ValueError(f"expected a mapping with keys {', '.join(self.config_keys)}")
        for key in value:
            if key not in self.config_keys:
                raise ValueError(f"unknown key {self.name}.{key} (valid: "
                                 f"{', '.join(self.config_keys)})")
        return dict(value)

    def check(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """At spawn, before anything is created: validate `options` (this
        executor's config section) and make sure it can launch now. Returns the
        fields to freeze into the `spawn` record. Raises ExecutorError."""
        return {}

    def launch(self, sid: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
               stderr_path: Path) -> Launched:
        """Start the runner; raise OSError (or ExecutorError) when it cannot be started."""
        raise NotImplementedError

    def alive(self, process: Mapping[str, Any]) -> Liveness:
        raise NotImplementedError

    def signal(self, process: Mapping[str, Any], grace_s: float) -> Signalled:
        """TERM the runner's whole tree, KILL what is left after `grace_s`."""
        raise NotImplementedError

    def collect(self, sid: str, process: Mapping[str, Any]) -> Collected | None:
        """Bring the runner's trail records and captured output into this
        machine's state folder. None when it cannot be reached now."""
        return Collected(ended=True)

    def deliver(self, sid: str, process: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> None:
        """Hand records the caller appended to this trail (steer, approval
        decisions, a cancel) to the runner. Raises ExecutorError."""
