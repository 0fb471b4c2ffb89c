"""The tools dimension (docs/explanation/rules.md#undeclared-means-unreachable): grantable and present, or a diagnostic."""

from __future__ import annotations

from pathlib import Path

from zapcli.capabilities import Grant, build_grant
from zapcli.definitions import Definition


def test_granted_in_declared_order(ws: Path, define) -> None:
    grant = build_grant(define("tools: [grep, read, bash]\n"), ws)
    assert grant.tools == ("grep", "read", "bash")
    assert grant.tool_names() == ["grep", "read", "bash"] and grant.diagnostics == []


def test_no_tools_key_means_no_tools(ws: Path, define) -> None:
    grant = build_grant(define(""), ws)
    assert grant.tool_names() == [] and grant.diagnostics == []


def test_missing_from_session_table_is_a_diagnostic(ws: Path, define) -> None:
    grant = build_grant(define("tools: [read, WebSearch]\n"), ws,
                        available_tools=["read", "grep", "bash"])
    assert grant.tools == ("read",)
    assert grant.diagnostics == [{"dimension": "tools", "name": "WebSearch", "message":
                                  "`WebSearch` is declared but not available in this session's "
                                  "tool table (no search provider is configured: set ZAPCLI_SEARCH_URL)"}]


def test_never_grantable_from_a_frozen_record_is_refused_with_reason(ws: Path) -> None:
    # A hand-made record (the loader already refuses these names).
    definition = Definition(name="x", description="d", tools=("read", "memory_write", "frob"))
    grant = build_grant(definition, ws)
    assert grant.tools == ("read",)
    messages = {d["name"]: d["message"] for d in grant.diagnostics}
    assert "memory: private|shared" in messages["memory_write"]
    assert "not a grantable tool" in messages["frob"]


def test_use_skill_without_skills(ws: Path, define) -> None:
    grant = build_grant(define("tools: [read, use_skill]\n"), ws)
    assert grant.tool_names() == ["read"]
    assert grant.diagnostics[0]["name"] == "use_skill"


def test_grant_round_trips(ws: Path, define) -> None:
    grant = build_grant(define("tools: [read]\nmemory: shared\n"), ws)
    again = Grant.from_dict(grant.to_dict())
    assert again == grant
    assert grant.to_dict()["tool_names"] == grant.tool_names()
