"""Is the configured model reachable? (`zapcli doctor`.)

Imports `zapcli.providers.resolve` and the openai SDK. One GET /models with a
10 s timeout and no retries; every failure becomes a line saying what to fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def probe(model: str | None, providers: Mapping[str, Any] | None) -> tuple[bool, str]:
    """(ok, detail) for the session default model."""
    from zapcli.agent.types import ModelError
    from zapcli.providers.resolve import build_client

    try:
        client = build_client(None, model, providers, os.environ, timeout_s=10, max_retries=0)
    except ModelError as exc:
        return False, exc.reason
    try:
        from openai import OpenAI

        sdk = OpenAI(base_url=client.base_url, api_key=client._api_key or "unused", timeout=10,
                     max_retries=0)
        models = [m.id for m in sdk.models.list()]
    except Exception as exc:  # doctor reports, never raises
        return False, f"{client.model} at {client.base_url or 'api.openai.com'}: {type(exc).__name__}: {exc}"
    if models and client.model not in models:
        return False, f"{client.model}: the server does not list it (it has: {', '.join(models[:5])})"
    return True, f"{client.model} at {client.base_url or 'api.openai.com'}"
