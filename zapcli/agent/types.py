"""Contracts shared by the agent loop, model clients, tools and approvals.

Imports nothing of zapcli but `zapcli.agent.modelerror` (ModelError, named here too). Record types and their fields are docs/explanation/rules.md#the-trail's; the
loop emits them through a `Sink` and never learns where they go (the child
writes them to its trail, `zapcli run` streams them to the terminal too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

# its own module: spawn checks a model's configuration without this one's imports
from zapcli.agent.modelerror import ModelError as ModelError

# (record type, fields) -> None. Types: thinking, text, tool_call, tool_result,
# usage, diagnostic, approval_request, approval_decision, steer, report.
Sink = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class ToolSpec:
    """What the model sees: name (canonical spelling), description, JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": dict(self.parameters)}}


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer to the model. `ok=False` is an error the model reads."""

    ok: bool
    content: str


@dataclass
class ToolContext:
    """What a tool may touch. Paths are absolute. `env` is already scrubbed."""

    workspace: str
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    writable_roots: tuple[str, ...] = ()
    deadline_monotonic: float | None = None  # time.monotonic() value; None = no deadline
    call_id: str = ""  # the tool call being run (each call gets its own context)
    siblings: int = 1  # calls to the same tool in the model message this call came in
    batch: int = 0  # that model message's number (its turn)
    # Where commands run: a `zapcli.sandbox.session.Sandbox` (its `run` starts
    # one), or None for this process's own namespaces.
    sandbox: Any = None
    # What the file tools may open: a `zapcli.beneath.View` (None: one made
    # from `workspace` and `writable_roots`, zapcli's own folders hidden).
    view: Any = None
    # This call's place in a Muster of calls made together (None: made alone)
    party: Party | None = None


class Muster:
    """The calls of one model message to the subagent tool: each spawn among
    them reserves its allotment, then waits (`Party.ready`) until every call
    of the message has done so or will not (C41: children spawned in one
    message reserve before any of them starts, so a child that spends at once
    cannot leave a later sibling nothing). They reserve in the order the
    model gave them (`Party.turn`): a limit (--max-subagents, the budget)
    refuses the ones past it, never whichever thread came last. Every party
    arrives exactly once: a spawn after its reservation, any other call as it
    starts, and the loop for a call that never reached the tool (denied,
    failed, stopped)."""

    WAIT_S = 20.0  # a sibling slower than this (a person asked) no longer holds the rest

    def __init__(self, parties: int):
        import threading

        self._left = parties
        self._arrived = [False] * parties
        self._made = 0
        self._cond = threading.Condition()

    def party(self) -> Party:
        with self._cond:
            index, self._made = self._made, self._made + 1
        return Party(self, index)

    def arrive(self, index: int | None = None) -> None:
        with self._cond:
            self._left -= 1
            if index is not None and index < len(self._arrived):
                self._arrived[index] = True
            self._cond.notify_all()

    def wait(self, timeout: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._left <= 0, timeout=timeout)

    def wait_before(self, index: int, timeout: float) -> None:
        """Until every call given before `index` has arrived (or `timeout`)."""
        with self._cond:
            self._cond.wait_for(lambda: all(self._arrived[:index]), timeout=timeout)


class Party:
    """One call's place in a Muster (`index`: its place in the message);
    arriving twice counts once."""

    def __init__(self, muster: Muster, index: int = 0):
        self._muster, self._arrived, self.index = muster, False, index

    def arrive(self) -> None:
        if not self._arrived:
            self._arrived = True
            self._muster.arrive(self.index)

    def turn(self) -> None:
        """Wait until the calls given before this one have reserved (or will
        not): a spawn reserves in the model's order."""
        self._muster.wait_before(self.index, Muster.WAIT_S)

    def ready(self) -> None:
        """Arrive, then wait for the rest of the message's calls."""
        self.arrive()
        self._muster.wait(Muster.WAIT_S)


class Tool(Protocol):
    spec: ToolSpec

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


@dataclass(frozen=True)
class ToolCall:
    """One call from the model. `arguments` is None when `error` says why
    (invalid JSON, not an object): the loop sends `error` back as a tool error."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""
    error: str | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0  # every input token, the cache's included
    output_tokens: int = 0
    cached_tokens: int = 0  # of input_tokens: read from the provider's cache
    cache_write_tokens: int = 0  # of input_tokens: written to it


@dataclass
class Turn:
    """One assistant message, assembled from a stream."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str = ""


class ModelClient(Protocol):
    model: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 on_delta: Callable[[str, str], None]) -> Turn:
        """Stream one assistant turn. `on_delta(kind, text)` with kind "text" or
        "thinking" as deltas arrive. Raises ModelError."""
        ...


class Verdict(Protocol):
    """An approval decision (`zapcli.approvals.Decision`): `action` is "allow",
    "ask" or "deny"; `summary` one line for a person; `reason` why."""

    @property
    def action(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def reason(self) -> str: ...


class Approver(Protocol):
    """The one approver interface (docs/explanation/rules.md#approvals): `check` decides from the policy
    alone and never blocks; `ask` settles what `check` did not allow — it asks
    a person and blocks until answered, or records and returns a denial."""

    def check(self, tool: str, args: dict[str, Any], *,
              allowlisted: bool | None = None) -> Verdict:
        """`allowlisted` is given by the MCP gateway for an `mcp_call` (True when
        the tool is on its server's allowlist); the loop never gives it."""
        ...

    def ask(self, tool: str, verdict: Verdict, args: dict[str, Any]) -> tuple[bool, str]:
        """Block until decided; return (approved, reason)."""
        ...


@dataclass(frozen=True)
class Limits:
    """Checked before every model call. `should_stop()` returns a reason (the
    status is "timeout" when it mentions a timeout or deadline, else "failed")
    or an explicit (status, reason). `max_tokens` stops the loop before a
    call that would pass it (the call is predicted from the last one and
    what the conversation grew since); `budget(next_tokens)` is the host's
    check of a budget the loop cannot see (a tree's, dollars): a stop
    (status, reason) or None."""

    max_turns: int = 40
    max_tokens: int | None = None  # input + output tokens summed over calls
    should_stop: Callable[[], str | tuple[str, str] | None] | None = None
    budget: Callable[[int], tuple[str, str] | None] | None = None


@dataclass(frozen=True)
class Hooks:
    """How the loop reaches its host. `steer()` returns (steer_id, text) pairs
    to deliver before the next call; `before_model_call()` returns notice
    lines sent as one user message; without an `approver` every tool runs;
    `redact(text)` is applied to every tool result before the model or the
    sink sees it."""

    approver: Approver | None = None
    steer: Callable[[], list[tuple[str, str]]] | None = None
    before_model_call: Callable[[], list[str]] | None = None
    redact: Callable[[str], str] | None = None  # masks secrets in a tool result before anyone sees it
    # check_report(final text) -> None to accept it; else (reason, message for
    # the model to try again) — or (reason, None): no more tries, the loop fails.
    check_report: Callable[[str], tuple[str, str | None] | None] | None = None
    # on_calls(messages): the conversation so far (system prompt first, the message asking
    # for tools last), before that message's calls run; read it then, do not keep it
    on_calls: Callable[[list[dict[str, Any]]], None] | None = None
    # await_results(stopping) when the model answers without a tool call: False when no result
    # of work it started is still due (the loop ends); else True once the next one has arrived
    # (announced by `before_model_call` before the model goes on) or `stopping()` said stop
    await_results: Callable[[Callable[[], bool]], bool] | None = None
