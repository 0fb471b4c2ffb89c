"""`zapcli.capabilities.delegation`: what a spawn record reaches, and what a
child reaches beyond its spawner (issue 27 item 6), read from the fields a
spawn record holds."""

from __future__ import annotations

from zapcli.capabilities.delegation import reach_of, wider

WS = "/work/repo"


def _agent(name: str, tools: list[str], *, network: bool = False, mode: str = "workspace",
           mcp: tuple[str, ...] = (), sandbox: str = "auto", workspace: str = WS) -> dict:
    definition = {"name": name, "tools": tools, "mcp": {"servers": list(mcp)},
                  **({"sandbox": {"network": True}} if network else {})}
    return {"cli": "zapcli", "agent": name, "definition": definition,
            "grant": {"tool_names": tools, "mcp": {"servers": list(mcp)}}, "approval": mode,
            "workspace": workspace, "writable_roots": [], "sandbox": sandbox}


READER = _agent("reader", ["read"])
GENERAL = _agent("general", ["bash", "read", "write", "WebFetch"], network=True)


def test_a_narrow_definition_sees_everything_a_wide_one_adds():
    more = wider(reach_of(READER), reach_of(GENERAL))
    assert more == ["tools bash, WebFetch, write", "the network", f"writes in {WS}"]


def test_within_is_within_and_a_fork_of_itself_adds_nothing():
    assert wider(reach_of(GENERAL), reach_of(READER)) == []
    assert wider(reach_of(READER), reach_of(READER)) == []


def test_each_dimension_on_its_own():
    writer = _agent("writer", ["read", "write"])
    assert wider(reach_of(writer), reach_of(_agent("writer", ["read", "write"], mode="full"))) == [
        "writes anywhere without asking", "approval mode full (yours: workspace)"]
    assert wider(reach_of(writer), reach_of(_agent("writer", ["read", "write"],
                                                   workspace="/elsewhere"))) == ["writes in /elsewhere"]
    assert wider(reach_of(READER), reach_of(_agent("r", ["read"], mcp=("gh",)))) == ["MCP servers gh"]
    shell = {"cli": "sh", "workspace": WS, "writable_roots": [], "sandbox": "off"}
    bashy = _agent("bashy", ["bash"])
    assert wider(reach_of(bashy), reach_of(shell)) == [
        "the network", "commands outside the sandbox", "writes anywhere without asking"]
    assert wider(reach_of(bashy), reach_of({**shell, "sandbox": "auto"})) == []
    claude = {"cli": "claude", "definition": None, "approval": "workspace", "workspace": WS}
    assert wider(reach_of(READER), reach_of(claude))[:2] == ["every tool claude has", "the network"]


def test_its_own_worktree_is_not_a_place_it_widens_to():
    tree = "/state/worktrees/sa_1"
    child = _agent("general", ["bash", "read", "write", "WebFetch"], network=True, workspace=tree)
    assert "writes in" not in " ".join(wider(reach_of(GENERAL), reach_of(child), own_tree=tree))


def test_a_shell_holds_the_file_tools_its_commands_could_stand_in_for():
    """bash writes and reads where a file tool would, so an unsandboxed shell
    starting `general` widens nothing; a sandboxed shell without the network
    still cannot start a child with the network, nor one outside the sandbox."""
    free = {"cli": "sh", "sandbox": "off", "workspace": WS, "writable_roots": []}
    boxed = {**free, "sandbox": "auto"}
    general = _agent("general", ["bash", "read", "write", "edit", "grep", "glob", "WebFetch"],
                     network=True)
    assert wider(reach_of(free), reach_of(general)) == []
    more = wider(reach_of(boxed), reach_of(general))
    assert "the network" in more and not any(m.startswith("tools") and "read" in m for m in more)
    assert wider(reach_of(boxed), reach_of({**general, "sandbox": "off"}))[-1:] != []
    assert wider(reach_of(READER), reach_of(_agent("w", ["read", "write"]))) == [
        "tools write", f"writes in {WS}"]
