"""`zapcli usage`: token totals per subagent and per session (parent run)."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.ops.usage import usage


def execute(all: bool = False, json: bool = False) -> int:
    parents = usage(all_sessions=all)
    if json:
        emit_json({"sessions": [{
            "session": p.parent, "own": vars(p.own), "total": vars(p.total),
            "subagents": [{"id": sid, "status": st, **vars(t)} for sid, st, t in p.subagents]}
            for p in parents]})
        return 0
    lines: list[tuple[str, str]] = []
    for p in parents:
        t = p.total
        sub_in = sum(x.input_tokens for _, _, x in p.subagents)
        sub_out = sum(x.output_tokens for _, _, x in p.subagents)
        lines.append(("bold", f"[SubAgent] session {p.parent}: {t.input_tokens} in, {t.output_tokens} out"
                              f" ({t.cached_tokens} cached) — its own calls {p.own.input_tokens} in / "
                              f"{p.own.output_tokens} out, its subagents {sub_in} in / {sub_out} out"))
        for sid, status, tok in p.subagents:
            lines.append(("", f"  {sid}: {status}, {tok.input_tokens} in, {tok.output_tokens} out"))
    if not lines:
        lines.append(("", "[SubAgent] no token usage recorded"))
    emit_lines(lines)
    return 0
