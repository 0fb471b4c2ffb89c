"""The `echo` backend: `echo-agent` as a zapcli agent CLI, in one module.

What any plugin backend for an agent CLI needs: a `CliBackend` subclass with
its facts, how to start the program (`launch`) and a parser of its events.
"""

from __future__ import annotations

from typing import Any

from zapcli.backends.clis.backend import CliBackend
from zapcli.backends.clis.base import CliLaunch, CliRequest, EventParser
from zapcli.trail.model import Outcome, Status


class EchoParser(EventParser):
    event_types = frozenset({"hello", "say", "done"})

    def __init__(self, model: str | None = None) -> None:
        self.model = model or "echo"
        self.answer: str | None = None

    def feed(self, event: Any) -> list[tuple[str, dict[str, Any]]]:
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "hello":
            self.session_id, self.version = event["session"], event["version"]
            return []
        if kind == "say":
            return [("text", {"delta": event["text"]})]
        if kind == "done":
            self.terminal, self.answer = True, event["answer"]
            tokens = event["tokens"]
            return [("usage", {"model": self.model, "input_tokens": tokens["in"],
                               "output_tokens": tokens["out"], "cached_tokens": 0})]
        return []

    def finish(self, exit_code: int | None, stderr_tail: str) -> Outcome:
        if self.answer is None:
            return Outcome(Status.FAILED, reason=f"echo-agent exited ({exit_code}) without "
                           f"an answer: {stderr_tail.strip()[-300:]}")
        return Outcome(Status.COMPLETED, report=self.answer)


class EchoBackend(CliBackend):
    name = "echo"
    summary = "the echo agent, a test plugin"
    binary = "echo-agent"
    event_format = "echo-json"
    install_hint = "pip install zapcli-echo-plugin"
    tested = ("1.2.0", "1.3")

    def launch(self, req: CliRequest, command: list[str]) -> CliLaunch:
        argv = [*command, "--json"] + (["--resume", req.resume] if req.resume else [])
        env = {**req.env, "ECHO_AGENT_HOME": str(req.config_home)}
        return CliLaunch(argv=argv, env=env, stdin=req.task.encode("utf-8"))

    def parser(self, req: CliRequest | None = None) -> EventParser:
        return EchoParser(req.model if req else None)
