"""Fork (docs/explanation/rules.md#fleets-traces-teams): a subagent that starts from a `zapcli run`'s conversation
so far — the same system prompt and messages, then its own task — so its
first request begins with exactly what the run last sent (a provider's
prompt cache applies).

Imports `zapcli.errors` only. The run's loop hands its conversation to a
`Conversation` before each message's tool calls run (`Hooks.on_calls`); the
`subagent` tool's `fork: true` takes it from there, and the child's frozen
spawn record holds its copy. The run's last message asked for tools; a fork
closes those calls with FORKED (a request with a call left open is
malformed), then its task follows.
"""

from __future__ import annotations

import threading

from zapcli.errors import UsageError, ZapcliError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FORKED = ("Forked here: you are a new subagent that starts from this conversation. The task "
          "you are given next is yours alone; the conversation before it is context.")


class Conversation:
    """A run's conversation as its loop last sent it, with the run's model."""

    def __init__(self, model: str | None):
        self.model = model
        self._messages: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def update(self, messages: list[dict[str, Any]]) -> None:
        """The loop's hook: its messages are appended to, never changed, so a
        shallow copy keeps this moment."""
        with self._lock:
            self._messages = list(messages)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"model": self.model, "messages": list(self._messages)}


def fields(snapshot: dict[str, Any], cli: str) -> dict[str, Any]:
    """The spawn record's `fork`: {model, system, messages}. Raises ZapcliError."""
    if cli != "zapcli":
        raise UsageError(f"fork needs the built-in agent (cli zapcli), not {cli}: an agent CLI "
                         "cannot start from zapcli's conversation")
    messages = list(snapshot.get("messages") or [])
    if not messages:
        raise ZapcliError("there is no conversation to fork yet", code="fork")
    system = ""
    if messages[0].get("role") == "system":
        system = str(messages.pop(0).get("content") or "")
    return {"model": snapshot.get("model"), "system": system,
            "messages": messages + _closing(messages)}


def _closing(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A tool result (FORKED) for each call of the last message still open."""
    if messages[-1].get("role") != "assistant":
        return []
    calls = messages[-1].get("tool_calls") or []
    return [{"role": "tool", "tool_call_id": c.get("id"), "content": FORKED} for c in calls]
