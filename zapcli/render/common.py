"""What every verb's renderer shares: durations, status phrases, the view
header, folded output, the view's JSON document.

Imports `zapcli.lifecycle.status` and `zapcli.results` types only; never
typer or rich. Human lines are (style, text) pairs: the CLI colours them on a
terminal, a tool call joins their text (`plain`). JSON documents are plain
dicts with snake_case keys.
"""

from __future__ import annotations

from zapcli.lifecycle.status import View
from zapcli.money import dollars
from zapcli.plain import asdict
from zapcli.render.text import alt, escape_controls, spell
from zapcli.results import CAP_BYTES, KEPT_WORDS, Folded
from zapcli.trail.model import Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

Lines = list[tuple[str, str]]

STATUS_STYLE = {"running": "cyan", "queued": "yellow", "awaiting_approval": "magenta",
                "completed": "green", "failed": "red", "timeout": "red", "cancelled": "yellow",
                "lost": "red", "interrupted": "red"}
TASK_PREVIEW = 40


def duration(seconds: float | None) -> str:
    """23s, 5m12s, 1h03m."""
    if seconds is None:
        return "?"
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def one_line(text: str, limit: int | None = None) -> str:
    """`text` on one line, cut to `limit` characters at a word when one is
    near, with `…` saying it was cut."""
    flat = " ".join(text.split())
    if limit and len(flat) > limit:
        cut = flat[: limit - 1]
        space = cut.rfind(" ")
        flat = (cut[:space] if space > limit * 0.6 else cut).rstrip(" ,;:") + "…"
    return escape_controls(flat)


NEWLINE_MARK = " ↵ "


def task_line(text: str, limit: int | None = None) -> str:
    """A task on one line as it was given: its spaces kept (a shell command's
    `"a    b"` is not `"a b"`), each line break shown as ` ↵ ` (two commands do
    not read as one), blank lines and the ends' whitespace dropped, tabs as
    one space; cut to `limit` characters as `one_line` cuts, with `…`."""
    lines = [line.replace("\t", " ").rstrip() for line in text.strip().splitlines()]
    flat = NEWLINE_MARK.join(line for line in lines if line.strip())
    if limit and len(flat) > limit:
        cut = flat[: limit - 1]
        space = cut.rfind(" ")
        flat = (cut[:space] if space > limit * 0.6 else cut).rstrip(" ,;:↵") + "…"
    return escape_controls(flat)


def last_line(f: Folded | None) -> str | None:
    """The last non-empty line a subagent wrote so far (from its folded output)."""
    if f is None or f.missing:
        return None
    for text in (f.tail, f.head):
        for line in reversed(text.split("\n")):
            if line.strip():
                return line
    return None


def status_phrase(v: View) -> str:
    """`running (running for 23s)`, `completed (took 45s, exit 0)`, ..."""
    if v.status.live:
        extra = f"running for {duration(v.elapsed_s)}"
        limited = rate_limited(v)
        if limited:
            return f"running ({limited})"
        if v.stalled_s is not None:
            return f"running (stalled {duration(v.stalled_s)})"
        if v.reason:  # a remote one's note: waiting for placement, not confirmed yet...
            flat = " ".join(v.reason.split())
            extra += f"; {one_line(flat) if len(flat) <= REASON_INLINE else 'reason below'}"
        return f"{v.status} ({extra})"
    if v.status == Status.QUEUED:
        if v.queued_out_there:  # its executor took it and has no room for it yet
            return f"queued ({v.queued_out_there})"
        held = held_reason(v)
        if held and (v.held or {}).get("kind") == "usage_limit":
            return f"queued ({held})"  # `queued (claude usage limit, resets 15:00)`
        if held:
            return f"queued (waiting: {held})"
        return "queued (waiting for " + ("dependencies / " if v.after else "") + "a free slot)"
    parts = [f"took {duration(v.elapsed_s)}"] if v.elapsed_s is not None else []
    reason = v.reason or ""
    if v.exit_code is not None and v.exit_code < 0 and reason.startswith("killed by"):
        pass  # a negative code is Python's way of saying the reason; say only the reason
    elif v.exit_code is not None:
        same = f"exit code {v.exit_code}"
        parts.append(f"exit {v.exit_code}" + reason[len(same):] if reason.startswith(same) else
                     f"exit {v.exit_code}")
        if reason.startswith(same):
            reason = ""
    if v.usage_limit:  # the reset first; the CLI's own words follow in the reason line
        parts.append(usage_limit_text(v.usage_limit))
    elif reason and v.status != Status.COMPLETED:
        # a long one is said whole on a line of its own (`reason_line`): its end
        # is often the advice (what to do), which a cut would drop
        parts.append(one_line(reason) if len(" ".join(reason.split())) <= REASON_INLINE
                     else "reason below")
    return f"{v.status} ({', '.join(parts)})" if parts else v.status


REASON_INLINE = 120  # characters of a reason said inside the status phrase
REASON_MAX = 2000  # a longer one keeps its start and its end (the advice)


def usage_limit_text(limit: dict[str, Any]) -> str:
    """`usage limit, resets 15:00 Europe/Warsaw` for a subagent that ended on
    its account's usage limit (C42)."""
    import time

    from zapcli.resettime import when_text

    at = limit.get("resets_at")
    return "usage limit, " + when_text(at if isinstance(at, (int, float)) else None,
                                       limit.get("zone"), time.time())


def reason_line(v: View) -> tuple[str, str] | None:
    """`  Reason: …` — the whole reason of one that ended otherwise than
    completed (or a remote one's note while it runs), when it is too long
    for the status phrase; else None."""
    flat = " ".join((v.reason or "").split())
    if v.status == Status.COMPLETED or not (v.terminal or v.status.live) or (
            len(flat) <= REASON_INLINE and not v.usage_limit):
        return None
    if len(flat) > REASON_MAX:
        flat = f"{flat[:REASON_MAX // 2]} … {flat[-REASON_MAX // 2:]}"
    return ("red" if v.terminal else "dim"), f"  Reason: {escape_controls(flat)}"


def _seconds_left(until: Any) -> float | None:
    if not isinstance(until, (int, float)) or isinstance(until, bool):
        return None
    import time

    return until - time.time()


def rate_limited(v: View) -> str | None:
    """`rate-limited, retry in 12s` for a subagent parked on a provider's
    rate limit (`retrying after a rate limit` once that time has come)."""
    if not v.rate_limit:
        return None
    left = _seconds_left(v.rate_limit.get("until"))
    if left is None or left <= 0:
        return "retrying after a rate limit"
    return f"rate-limited, retry in {max(int(left + 0.999), 1)}s"


def held_reason(v: View) -> str | None:
    """Why the queue holds a subagent back (a provider's rate limit), while it does."""
    if not v.held:
        return None
    from zapcli.lifecycle.waiting import held

    return held(v)


def tokens_text(t: Any) -> str:
    """`1,200 in (300 cache-read, 100 cache-write), 400 out, $0.0123` for anything
    with the ledger's figures (a view, `ledger.Tokens`); thousands separated,
    as every count of tokens a person reads."""
    cache = [f"{n:,} {what}" for n, what in ((t.cached_tokens, "cache-read"),
                                             (getattr(t, "cache_write_tokens", 0), "cache-write")) if n]
    text = f"{t.input_tokens:,} in" + (f" ({', '.join(cache)})" if cache else "")
    text += f", {t.output_tokens:,} out"
    if getattr(t, "cost_usd", None) is not None:
        text += f", {dollars(t.cost_usd)}"
    return text


def approval_lines(req: dict[str, Any], indent: str = "  ") -> Lines:
    """A pending approval request as a person decides it: its id, then the
    whole call it asks for (`zapcli.approvaltext`), every line, escaped
    (`render.text.shown`) — never a summary. A line the terminal is too
    narrow for wraps there; nothing is cut."""
    from zapcli.render.text import shown

    whole = shown(str(req.get("summary") or req.get("tool") or ""))
    head = f"{indent}Awaiting approval {req.get('req_id')}:"
    if "\n" not in whole:
        return [("magenta", f"{head} {whole}")]
    return [("magenta", head), *(("magenta", f"{indent}  {line}") for line in whole.split("\n"))]


def elicited(sid: str, req: dict[str, Any], task: str) -> str:
    """The question an MCP client's user is asked about `sid`'s pending
    request: the whole call (escaped, never cut), then its task."""
    from zapcli.render.text import shown

    return (f"zapcli subagent {sid} asks for approval ({req.get('req_id')}) of:\n"
            f"{shown(str(req.get('summary') or req.get('tool') or ''))}\n"
            f"Task: {shown(' '.join(task.split())[:200])}\nAccept to allow it, decline to deny it.")


def undelivered_line(v: View, indent: str = "  ") -> tuple[str, str]:
    """The messages sent to `v` that it ended before reading, and how its
    work goes on with them (a line of poll, wait, list)."""
    return ("yellow", f"{indent}Not delivered: {v.undelivered_messages} message(s) sent with "
                      + alt("zapcli send", "send") + " (it ended before reading them); "
                      + alt(f"zapcli continue {v.id} TEXT carries on",
                            "action spawn with them starts anew"))


def view_header(v: View) -> list[tuple[str, str]]:
    lines = [(STATUS_STYLE.get(v.status, ""), f"{v.id}: {status_phrase(v)}")]
    reason = reason_line(v)
    if reason:
        lines.append(reason)
    lines += [("dim", f"  CLI: {v.cli}" + (f" (agent {v.agent})" if v.agent else "")),
              ("", f"  Task: {task_line(v.task, 100)}")]
    if v.pending_approval:
        req = v.pending_approval
        lines += approval_lines(req)
        rid = req.get("req_id")
        lines.append(("dim", alt(f"  Decide: zapcli approve {v.id} {rid} | zapcli deny {v.id} {rid}",
                                 f"  Decide: action approve or deny with id {v.id} and req {rid}",
                                 "  The person running zapcli is asked; you are told the outcome")))
    if v.undelivered_messages:
        lines.append(undelivered_line(v))
    if v.pending:
        lines.append(("yellow", f"  Ended with {len(v.pending)} subagent(s) of its own still "
                                f"running: {', '.join(v.pending)}"))
    if v.input_tokens or v.output_tokens:
        calls = f" in {v.calls} model call" + ("s" if v.calls != 1 else "") if v.calls else ""
        lines.append(("dim", f"  Tokens: {tokens_text(v)}{calls}"))
    return lines


def cut_note(written: int | None, kept: int, ends_kept: bool = False) -> str | None:
    """What became of output that did not all reach its file: capped past
    1 MB (`ends_kept`: its first and last part kept; a file of before that
    kept its first 1 MB), or a write that failed (a full disk); None when
    all of it is there."""
    if not written or written <= kept:
        return None
    if ends_kept:
        return f"OUTPUT TRUNCATED ({written} bytes written; {KEPT_WORDS})"
    if kept >= CAP_BYTES:
        return f"OUTPUT TRUNCATED ({written} bytes written, 1 MB kept)"
    return (f"OUTPUT INCOMPLETE ({written} bytes written, {kept} kept: writing the output file "
            "failed, e.g. a full disk)")


def folded_lines(f: Folded, *, so_far: bool = False, sid: str = "ID",
                 stream: str = "Output") -> list[tuple[str, str]]:
    """The folded output block; `so_far` for a subagent still running; `sid`
    names the subagent in the hint that shows the rest; `stream` the block's
    title ("Stderr": the rest is `zapcli output --stderr`)."""
    lines: list[tuple[str, str]] = []
    note = cut_note(f.written, f.kept, f.ends_kept) if f.truncated else None
    if note:
        lines.append(("bold red", f"  {note}"))
    if f.unreadable:
        lines.append(("yellow", f"  (output file not read: {f.unreadable}; {f.written} bytes "
                                "were written)"))
        return lines
    if f.missing:
        lines.append(("yellow", f"  (output file missing: {f.written} bytes were written, and the "
                                "file was removed since)"))
        return lines
    if not f.head:
        lines.append(("dim", "  (no output yet)" if so_far else "  (no output)"))
        return lines
    lines.append(("dim", f"  {stream} so far:" if so_far else f"  {stream}:"))
    lines.extend(("", "    " + escape_controls(x)) for x in f.head.rstrip("\n").split("\n"))
    if f.folded_bytes:
        shows = ("its first and last 512 KB" if f.ends_kept else "the 1 MB kept" if f.truncated
                 else "everything")
        how = (alt(f"zapcli output {sid} --stderr", "action output with stderr true") if stream == "Stderr"
               else alt(f"zapcli output {sid}", "action output"))
        lines.append(("yellow", f"    … {f.folded_bytes} bytes folded ({how} shows {shows}) …"))
        lines.extend(("", "    " + escape_controls(x)) for x in f.tail.rstrip("\n").split("\n"))
    return lines


JSON_TASK_BYTES = 2048


def view_json(v: View) -> dict[str, Any]:
    """A view as JSON; the task is folded to 2 KB (`zapcli replay --json` has it whole)."""
    doc = asdict(v)
    raw = v.task.encode("utf-8", "replace")
    doc["task_bytes"] = len(raw)
    if len(raw) > JSON_TASK_BYTES:
        from zapcli.trail.records import fold_text

        doc["task"] = fold_text(v.task, JSON_TASK_BYTES)
    doc["after"] = list(v.after)
    doc["terminal"] = v.terminal
    for key in ("elapsed_s", "stalled_s"):  # milliseconds, not float noise
        if isinstance(doc.get(key), float):
            doc[key] = round(doc[key], 3)
    return doc


def folded_json(f: Folded) -> dict[str, Any]:
    return {"head": f.head, "tail": f.tail, "folded_bytes": f.folded_bytes,
            "kept_bytes": f.kept, "written_bytes": f.written, "truncated": f.truncated,
            "ends_kept": f.ends_kept,
            "missing": f.missing}


def plain(lines: Lines, surface: str = "tool") -> str:
    """The text of rendered lines, as an LLM tool result (`surface`: tool or run)."""
    return spell("\n".join(text for _style, text in lines), surface)
