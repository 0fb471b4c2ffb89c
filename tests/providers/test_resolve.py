"""Model resolution: precedence, `provider/model`, and reasons naming what to set."""

from __future__ import annotations

import pytest

from zapcli.agent.types import ModelError
from zapcli.providers.resolve import NO_MODEL, build_client, resolve_model

PROVIDERS = {"local": {"base_url": "http://localhost:11434/v1"},
             "router": {"base_url": "https://openrouter.ai/api/v1", "api_key_env": "ROUTER_KEY"}}


def test_no_model_says_what_to_set():
    with pytest.raises(ModelError) as exc:
        resolve_model(None, None, {}, {})
    assert exc.value.reason == NO_MODEL
    assert "--model" in NO_MODEL and "ZAPCLI_MODEL" in NO_MODEL and "model:" in NO_MODEL


def test_precedence_flag_then_env_then_settings():
    env = {"ZAPCLI_MODEL": "from-env"}
    assert resolve_model("flag", "cfg", {}, env)[0] == "flag"
    assert resolve_model(None, "cfg", {}, env)[0] == "from-env"
    assert resolve_model("  ", "cfg", {}, {})[0] == "cfg"


def test_plain_model_uses_openai_env():
    env = {"OPENAI_BASE_URL": "http://h:1/v1"}
    assert resolve_model("gpt-x", None, PROVIDERS, env) == ("gpt-x", "http://h:1/v1", "OPENAI_API_KEY")
    assert resolve_model("gpt-x", None, None, {}) == ("gpt-x", None, "OPENAI_API_KEY")


def test_provider_prefix():
    assert resolve_model("router/anthropic/claude", None, PROVIDERS, {}) == (
        "anthropic/claude", "https://openrouter.ai/api/v1", "ROUTER_KEY")
    assert resolve_model("local/qwen3", None, PROVIDERS, {}) == (
        "qwen3", "http://localhost:11434/v1", None)


def test_unknown_prefix_is_part_of_the_model_name():
    assert resolve_model("meta-llama/Llama-3", None, PROVIDERS, {})[0] == "meta-llama/Llama-3"


@pytest.mark.parametrize("entry, needle", [
    ("http://x", "must be a mapping"),
    ({"api_key_env": "K"}, "providers.p.base_url is missing"),
    ({"base_url": "http://x", "api_key_env": 3}, "providers.p.api_key_env"),
])
def test_malformed_provider_entries(entry, needle):
    with pytest.raises(ModelError, match=needle):
        resolve_model("p/m", None, {"p": entry}, {})


def test_provider_without_model():
    with pytest.raises(ModelError, match="write `local/MODEL`"):
        resolve_model("local/", None, PROVIDERS, {})


def test_build_client_reads_the_key_by_name():
    client = build_client("router/m", None, PROVIDERS, {"ROUTER_KEY": "rk-123456789"})
    assert client.model == "m" and client.api_key_env == "ROUTER_KEY"
    assert client.base_url == "https://openrouter.ai/api/v1"
    with pytest.raises(ModelError, match="ROUTER_KEY"):
        build_client("router/m", None, PROVIDERS, {})
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        build_client("gpt-x", None, {}, {})
    assert build_client("local/m", None, PROVIDERS, {}).model == "m"  # needs no key
