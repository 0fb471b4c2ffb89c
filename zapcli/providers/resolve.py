"""Which model, endpoint and key variable a run uses (docs/explanation/rules.md#models); cheap enough for `spawn` to call.
Imports `zapcli.agent.modelerror`; `zapcli.providers.openai_chat` only inside `build_client`.

A model is written `MODEL` (served by OPENAI_BASE_URL with OPENAI_API_KEY)
or `PROVIDER/MODEL` where PROVIDER is a key of config `providers:
{name: {base_url, api_key_env}}`. A prefix that is not a configured provider
is part of the model name (`meta-llama/Llama-3-8B` on a vLLM server).
API keys are read from the environment by name, never passed on a command line.
"""

from __future__ import annotations

from collections.abc import Mapping

from zapcli.agent.modelerror import ModelError

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.providers.openai_chat import ChatClient

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
NO_MODEL = ("no model configured: pass --model, set ZAPCLI_MODEL, or set `model:` in your "
            "config.yaml ($ZAPCLI_CONFIG_HOME, default ~/.config/zapcli)")


def resolve_model(model_flag: str | None, settings_model: str | None,
                  providers: Mapping[str, Any] | None,
                  env: Mapping[str, str]) -> tuple[str, str | None, str | None]:
    """Return (model, base_url, api_key_env_name).

    Precedence: `model_flag` > env ZAPCLI_MODEL > `settings_model`.
    `base_url` None means the SDK default (api.openai.com); `api_key_env_name`
    None means the provider needs no key. Raises ModelError when no model is
    configured or the named provider's entry is malformed (reason names the key).
    """
    name = next((m.strip() for m in (model_flag, env.get("ZAPCLI_MODEL"), settings_model)
                 if m and m.strip()), "")
    if not name:
        raise ModelError(NO_MODEL)
    prefix, slash, rest = name.partition("/")
    providers = providers or {}
    if not (slash and prefix in providers):
        return name, (env.get("OPENAI_BASE_URL") or None), DEFAULT_KEY_ENV
    entry = providers[prefix]
    where = f"config key providers.{prefix}"
    if not isinstance(entry, Mapping):
        raise ModelError(f"{where} must be a mapping with base_url (and api_key_env)")
    base_url = entry.get("base_url")
    if not isinstance(base_url, str) or not base_url.strip():
        raise ModelError(f"{where}.base_url is missing: set it to the server's URL, "
                         "e.g. http://localhost:11434/v1")
    key_env = entry.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not key_env.strip()):
        raise ModelError(f"{where}.api_key_env must be the name of an environment variable")
    if not rest.strip():
        raise ModelError(f"model `{name}` names provider `{prefix}` but no model: "
                         f"write `{prefix}/MODEL`")
    return rest.strip(), base_url.strip(), (key_env.strip() if key_env else None)


def build_client(model_flag: str | None, settings_model: str | None,
                 providers: Mapping[str, Any] | None, env: Mapping[str, str], *,
                 timeout_s: float = 120, max_retries: int = 3) -> ChatClient:
    """Resolve and construct the ChatClient (no network, `openai` not loaded yet).
    Raises ModelError when no model is configured or a needed key is unset."""
    from zapcli.providers.openai_chat import NO_KEY, ChatClient

    model, base_url, key_env = resolve_model(model_flag, settings_model, providers, env)
    key = env.get(key_env) if key_env else None
    if key_env and not key:
        if key_env != DEFAULT_KEY_ENV:
            raise ModelError(f"model `{model}` needs an API key in {key_env} (config "
                             "`providers.*.api_key_env`), which is not set: export it")
        if base_url is None:
            raise ModelError(f"no API key: set {DEFAULT_KEY_ENV}, or set OPENAI_BASE_URL to a "
                             "local server that needs none")
    return ChatClient(model, base_url=base_url, api_key=key or NO_KEY, timeout_s=timeout_s,
                      max_retries=max_retries, api_key_env=key_env or DEFAULT_KEY_ENV)
