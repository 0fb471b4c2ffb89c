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
    from zapcli.providers.sdk import load

    openai = load()

    where = client.base_url or "https://api.openai.com/v1"
    try:
        sdk = openai.OpenAI(base_url=client.base_url, api_key=client._api_key or "unused",
                            timeout=10, max_retries=0)
        models = [m.id for m in sdk.models.list()]
    except openai.NotFoundError:
        return False, (f"{where}/models answered 404: check OPENAI_BASE_URL (or the provider's "
                       "base_url); it usually ends in /v1")
    except openai.OpenAIError as exc:  # the same wording a failing subagent would show
        return False, f"{client.model}: {client.explain(exc).reason}"
    except Exception as exc:  # noqa: BLE001 - doctor reports, never raises
        return False, f"{client.model} at {where}: {type(exc).__name__}: {exc}"
    if models and client.model not in models:
        return False, f"{client.model}: the server does not list it (it has: {', '.join(models[:5])})"
    return True, f"{client.model} at {client.base_url or 'api.openai.com'}"
