"""`ModelError`: a model call (or the model's configuration) failed for good.
Its own module, importing nothing, so the parent's check of a model at spawn
(`zapcli.providers.resolve`) does not load the loop's types (`dataclasses`,
`typing`); `zapcli.agent.types` names it too.
"""

from __future__ import annotations


class ModelError(Exception):
    """The model call failed for good (after the SDK's retries); `reason` is
    one line a user can act on, e.g. "model endpoint returned 401: check
    OPENAI_API_KEY". `retry_after` (seconds, 0 when the server named no
    time) marks a rate limit or an overloaded server: the loop parks and
    tries again instead of failing; `status` is the HTTP status.
    `usage_limit`: the provider's words, when the endpoint's answer itself
    (a 429) said the account's usage limit — never read back out of
    `reason`, which may quote what an endpoint or a model said."""

    def __init__(self, reason: str, *, retry_after: float | None = None, status: int | None = None,
                 usage_limit: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.status = status
        self.usage_limit = usage_limit
