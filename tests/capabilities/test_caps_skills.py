"""Skills (docs/explanation/rules.md#undeclared-means-unreachable): allowlisted, layered lookup, first found wins, body on demand."""

from __future__ import annotations

from pathlib import Path

from zapcli.agent.types import ToolContext
from zapcli.capabilities import assemble_prompt, build_grant, open_tools
from zapcli.capabilities.skills import skill_roots


def ctx(ws: Path) -> ToolContext:
    return ToolContext(str(ws), str(ws))


def test_layer_order(ws: Path, isolated: Path) -> None:
    home = isolated / "home"
    assert skill_roots(ws)[:6] == [
        ws / ".zapcli/skills", ws / ".claude/skills", ws / ".agents/skills",
        isolated / "config/skills", home / ".claude/skills", home / ".agents/skills"]


def test_first_found_wins_and_missing_is_a_diagnostic(ws: Path, isolated: Path, define,
                                                      make_skill) -> None:
    make_skill(isolated / "home" / ".claude" / "skills", "pdf", "User pdf skill.")
    make_skill(ws / ".claude" / "skills", "pdf", "Workspace pdf skill.")
    make_skill(isolated / "config" / "skills", "charts", "Draw charts.")
    make_skill(ws / ".zapcli" / "skills", "unlisted", "Not declared.")
    grant = build_grant(define("tools: [read]\nskills: [pdf, charts, nope]\n"), ws)
    assert [(s.name, s.description) for s in grant.skills] == [
        ("pdf", "Workspace pdf skill."), ("charts", "Draw charts.")]
    assert [d["name"] for d in grant.diagnostics] == ["nope"]
    assert "not found" in grant.diagnostics[0]["message"]
    assert grant.tool_names() == ["read", "use_skill"]


def test_use_skill_loads_only_granted_skills(ws: Path, define, make_skill) -> None:
    root = ws / ".zapcli" / "skills"
    make_skill(root, "pdf", "Pdf work.", "Step 1: extract.\nStep 2: summarise.")
    make_skill(root, "secret", "Not granted.", "hidden body")
    grant = build_grant(define("skills: [pdf]\n"), ws)
    use_skill = open_tools(grant).tools[0]
    assert use_skill.spec.name == "use_skill"
    result = use_skill.run({"name": "pdf"}, ctx(ws))
    assert result.ok and "Step 2: summarise." in result.content and "description" not in result.content
    refused = use_skill.run({"name": "secret"}, ctx(ws))
    assert not refused.ok and "not available to this subagent" in refused.content
    assert "hidden" not in refused.content


def test_prompt_lists_one_line_per_skill_not_the_body(ws: Path, define, make_skill) -> None:
    make_skill(ws / ".zapcli" / "skills", "pdf", "Pdf work.", "THE BODY")
    definition = define("skills: [pdf]\n")
    prompt = assemble_prompt(definition, build_grant(definition, ws))
    assert "- pdf: Pdf work. (.zapcli/skills/pdf/SKILL.md)" in prompt
    assert "THE BODY" not in prompt


def test_broken_skill_is_a_diagnostic_and_later_layers_are_tried(ws: Path, isolated: Path,
                                                                  define, make_skill) -> None:
    bad = ws / ".zapcli" / "skills" / "pdf"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("no frontmatter here")
    grant = build_grant(define("skills: [pdf]\n"), ws)
    assert not grant.skills and "frontmatter" in grant.diagnostics[0]["message"]
    make_skill(isolated / "config" / "skills", "pdf", "System pdf.")
    grant = build_grant(define("skills: [pdf]\n"), ws)
    assert grant.skills[0].description == "System pdf."
