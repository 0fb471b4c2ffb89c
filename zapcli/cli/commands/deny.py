"""`zapcli deny`: refuse a pending approval request, with a reason for the model."""

from __future__ import annotations

from zapcli.cli.commands import approve


def execute(id: str, req: str | None = None, reason: str | None = None, json: bool = False) -> int:
    return approve.execute(id, req, json, approve=False, reason=reason)
