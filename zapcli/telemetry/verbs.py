"""The verbs: `zapcli trace export`, `zapcli export --format atif`,
`zapcli timeline`. Each returns a plain result; the CLI renders it.

Imports `zapcli.telemetry` (tree, spans, otlp, atif, timeline, page), `zapcli.paths`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from zapcli.errors import UsageError, ZapcliError
from zapcli.telemetry import tree as trees
from zapcli.telemetry.spans import build


@dataclass
class Exported:
    endpoint: str
    trees: list[str]
    subagents: int
    spans: int
    unfinished: list[str] = field(default_factory=list)  # still running: their open spans wait


def roots_for(any_id: str | None, session: str | list[str] | None) -> tuple[list[trees.Node], str]:
    """The trees named by an id or by sessions (one or the other)."""
    sessions = [session] if isinstance(session, str) else list(session or [])
    if (any_id is None) == (not sessions):
        raise UsageError("name one subagent (or run) id, or --session S (zapcli session prints yours)")
    if sessions:
        roots = [root for s in dict.fromkeys(sessions) for root in trees.session_trees(s)]
        return roots, f"session{'s' if len(sessions) > 1 else ''} {', '.join(dict.fromkeys(sessions))}"
    node = trees.tree(any_id or "")
    return [node], node.id


def trace_export(any_id: str | None, session: str | list[str] | None) -> Exported:
    """Send the finished spans of the named trees to the OTLP endpoint now."""
    from zapcli.telemetry import otlp

    endpoint = otlp.endpoint()
    if endpoint is None:
        raise UsageError("no collector: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://localhost:4318) "
                         "or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    roots, _title = roots_for(any_id, session)
    exporter = otlp.Exporter()
    result = Exported(endpoint, [r.id for r in roots], 0, 0)
    for root in roots:
        for node in root.walk():
            agent, spans = build(node.id, node.records(), finished=False)
            if agent.ended is None:
                result.unfinished.append(node.id)
            if not exporter.export_now(agent, spans):
                raise ZapcliError(f"the collector at {endpoint} did not take the spans of {node.id} "
                                  f"({result.spans} sent before it); check that it runs and speaks "
                                  "OTLP/HTTP (port 4318), then run this again")
            result.subagents += 1
            result.spans += sum(1 for s in spans if s.end is not None)
    exporter.close(1.0)
    return result


@dataclass
class Written:
    path: str  # "-" for stdout
    format: str
    subagents: int  # as `list` counts them: a run written with them is not one (`runs`)
    document: Any = None  # what was written, for stdout
    runs: tuple[str, ...] = ()  # the `zapcli run`s written, each the root of its tree
    besides: int = 0  # of `subagents`, those in no written run's tree (another session's)


def export(any_id: str, fmt: str, out: str | None) -> Written:
    if fmt != "atif":
        raise UsageError(f"unknown --format '{fmt}'; choose: atif")
    from zapcli.telemetry import atif

    node = trees.tree(any_id)
    doc = atif.trajectory(node)
    nodes = node.walk()
    runs = tuple(n.id for n in nodes if n.spawn.get("run") is True)
    return _write(doc, out, "atif", len(nodes) - len(runs), runs)


def timeline(any_id: str | None, session: str | list[str] | None, html: str | None, fmt: str | None,
             out: str | None) -> Written:
    from zapcli.telemetry import timeline as tl

    fmt = fmt or ("html" if html else None)
    if fmt not in ("html", "perfetto"):
        raise UsageError("say what to write: --html FILE (a page to open in a browser) or "
                         "--format perfetto [-o FILE] (trace-event JSON for ui.perfetto.dev); "
                         "--json says what was written, as JSON"
                         if fmt is None else f"unknown --format '{fmt}'; choose: html (with -o "
                         "FILE), perfetto")
    if fmt == "html" and html and out and html != out:
        raise UsageError("--html names the page's file; leave -o out")
    roots, title = roots_for(any_id, session)
    data = tl.collect(roots, title)
    runs = tuple(r["id"] for r in data["rows"] if r["is_run"])
    count = len(data["rows"]) - len(runs)  # as `list` counts: the run is the run
    in_runs = sum(len(root.walk()) - 1 for root in roots if root.id in runs)
    besides = max(count - in_runs, 0) if runs else 0
    if fmt == "perfetto":
        return replace(_write(tl.perfetto(data), out or html, "perfetto", count, runs), besides=besides)
    from zapcli.telemetry import page

    target = html or out
    if not target:
        raise UsageError("a page needs a file: --format html -o timeline.html (or --html "
                         "timeline.html)")
    _save(Path(target), page.render(data).encode("utf-8"))
    return Written(str(Path(target).resolve()), "html", count, runs=runs, besides=besides)


def _write(doc: Any, out: str | None, fmt: str, count: int, runs: tuple[str, ...] = ()) -> Written:
    if out is None or out == "-":
        return Written("-", fmt, count, doc, runs)
    import orjson

    from zapcli.jsontext import escape_json

    _save(Path(out), escape_json(orjson.dumps(doc, option=orjson.OPT_INDENT_2)) + b"\n")
    return Written(str(Path(out).resolve()), fmt, count, runs=runs)


def _save(path: Path, data: bytes) -> None:
    """Whole or not at all: a temporary file beside it, then a rename."""
    if path.is_dir():
        raise UsageError(f"{path} is a folder; name a file")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ZapcliError(f"could not write {path}: {exc.strerror or exc}") from None
