"""zapcli's approval hook for Claude Code: a stdio MCP server (official `mcp`
SDK) whose tool `approve` is claude's `--permission-prompt-tool` (docs/explanation/rules.md#approvals,
docs/explanation/rules.md#agent-clis). Run by claude as `python -m zapcli.backends.clis.approval_server --id ID`.

Imports `mcp` (2.x `MCPServer`, 1.x `FastMCP`), `zapcli.trail`,
`zapcli.backends.gate` (the waiting). Each call — Claude Code sends
{tool_name, input, tool_use_id} — becomes an `approval_request` record in
the subagent's trail (so poll and list show `awaiting_approval` with the tool
and the whole call), decided by `zapcli approve` / `deny` (or the
deadline, or a kill: denied). The answer is ONE text block holding
{"behavior": "allow", "updatedInput": input} or {"behavior": "deny",
"message": reason}, as claude expects.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from zapcli.trail import events, reader, store

_KEYS = ("command", "file_path", "path", "url", "pattern", "notebook_path")
# claude's own words about a built-in call, which what runs does not read: Bash's `description`
# (shown in claude's own screen only). Any other tool's argument of that name is the call's.
_SAID = {"Bash": ("description",)}


def canonical(args: dict[str, Any]) -> str:
    """`args` as one text: keys sorted, types kept (`1`, `1.0` and `true`
    differ). Two calls are the same call when their texts are equal."""
    return json.dumps(args, ensure_ascii=False, sort_keys=True)


def summary(tool: str, args: dict[str, Any]) -> str:
    """The whole call, as the person approves it (never cut: poll, the run's
    question and the MCP elicitation show it wrapped and escaped).

    An MCP tool's (`mcp__<server>__<tool>`, which the relay's gate lets run
    on this approval when the call's canonical text is the same):
    `tool: <canonical(args)>`, every argument. A claude built-in's (a schema
    of its own): what it acts on first, e.g. `Bash: rm -rf build`, then
    every other argument but claude's own words about it (`_SAID`)."""
    if tool.startswith("mcp__"):  # any schema: the argument a head would show is not named
        return f"{tool}: {canonical(args)}" if args else tool
    key = next((k for k in _KEYS if isinstance(args.get(k), str) and args[k].strip()), None)
    rest = {k: v for k, v in args.items() if k != key and k not in _SAID.get(tool, ())}
    head = f"{tool}: {args[key]}" if key else tool
    if not rest:
        return head
    return f"{head}\n{json.dumps(rest, ensure_ascii=False, indent=1)}" if key else \
        f"{tool}: {json.dumps(rest, ensure_ascii=False)}"


def _deadline(path: Any) -> float:
    """The runner's deadline (monotonic clock, system-wide on Linux)."""
    for rec in reader.read(path).records:
        if rec.get("type") == "start" and isinstance(rec.get("deadline_mono"), (int, float)):
            return float(rec["deadline_mono"])
    return time.monotonic() + 300.0


def request(sid: str, tool: str, args: dict[str, Any], call_id: str | None) -> tuple[bool, str]:
    """Record the request in `sid`'s trail and wait for the decision."""
    from zapcli.backends.gate import wait_decision

    path = store.path_for(sid)
    with store.locked(path):
        n = sum(1 for r in reader.read(path).records if r.get("type") == "approval_request")
        req_id = f"r{n + 1}"
        store.append(path, "approval_request", {
            "req_id": req_id, "tool": tool, "summary": summary(tool, args), "arguments": args,
            "call_id": call_id, "by": "claude"})
    events.emit(path, "needs_input")  # its hook runs now, nobody need be looking
    relay = next((r.get("relay") for r in reader.read(path).records if r.get("type") == "spawn"),
                 None)
    return wait_decision(path, req_id, deadline_mono=_deadline(path), stopped=lambda: False,
                         record=lambda f: store.append(path, "approval_decision", f),
                         relay=relay if isinstance(relay, dict) else None)


def answer(approved: bool, reason: str, args: dict[str, Any]) -> str:
    if approved:
        return json.dumps({"behavior": "allow", "updatedInput": args})
    return json.dumps({"behavior": "deny", "message": f"denied through zapcli: {reason}"
                       if reason else "denied through zapcli"})


def serve(sid: str) -> None:
    try:
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef,attr-defined]

    server = Server("zapcli_approval")

    @server.tool(structured_output=False)
    async def approve(tool_name: str, input: dict[str, Any], tool_use_id: str | None = None) -> str:
        """Decide whether Claude Code may run a tool call (zapcli approvals)."""
        import anyio

        args = input if isinstance(input, dict) else {}
        ok, reason = await anyio.to_thread.run_sync(request, sid, tool_name, args, tool_use_id)
        return answer(ok, reason, args)

    server.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zapcli-approval-server")
    parser.add_argument("--id", required=True)
    args = parser.parse_args(argv)
    store.path_for(args.id)  # refuses anything that is not a subagent id
    serve(args.id)
    return 0


if __name__ == "__main__":
    from zapcli import keyguard

    keyguard.seal()  # started by claude with its environment: no key stays in our block
    raise SystemExit(main())
