"""`zapcli untrust [PATH]`: stop trusting a folder (as `zapcli trust --revoke`)."""

from __future__ import annotations

from zapcli.cli.commands import trust


def execute(path: str | None = None, json: bool = False) -> int:
    return trust.execute(path, revoke=True, json=json)
