"""The `echo-local` executor: this machine, like `local`, with a config.yaml
section of its own (`echo-local: {label: TEXT}`) that it checks and records
in each subagent's `process` record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zapcli.executors.base import Launched
from zapcli.executors.local import LocalExecutor


class EchoExecutor(LocalExecutor):
    name = "echo-local"
    summary = "this machine, by a test plugin"
    config_keys = ("label",)

    def check_config(self, value: Any) -> dict[str, Any]:
        value = super().check_config(value)
        if not isinstance(value.get("label", ""), str):
            raise ValueError("echo-local.label: expected text")
        return value

    def check(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {"echo_label": str(options.get("label") or "none")}

    def launch(self, sid: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
               stderr_path: Path) -> Launched:
        launched = super().launch(sid, argv, env=env, cwd=cwd, stderr_path=stderr_path)
        return Launched({**launched.fields, "executor": self.name})
