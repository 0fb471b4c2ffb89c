"""The JSON Schemas of zapcli's `--json` documents, listed on the JSON output
page (docs/reference/json.md) wherever it says `<!-- json-schemas -->`: one
row per file in docs/reference/json/, with its title and `$id`, so that the
list is always the files that are there. An MkDocs hook (mkdocs.yml `hooks:`)."""

from __future__ import annotations

import json
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "reference" / "json"
MARK = "<!-- json-schemas -->"


def table() -> str:
    rows = ["| schema | file | describes |", "|---|---|---|"]
    for path in sorted(FOLDER.glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        sid = str(doc.get("$id") or doc.get("title") or path.stem)
        what = " ".join(str(doc.get("description") or doc.get("title") or "").split())
        rows.append(f"| `{sid}` | [{path.name}](json/{path.name}) | {what} |")
    if len(rows) == 2:
        return "*(No schema files are in docs/reference/json/ in this build.)*"
    return "\n".join(rows)


def on_page_markdown(markdown, page, config, files):  # noqa: ANN001 — MkDocs' hook signature
    return markdown.replace(MARK, table()) if MARK in markdown else markdown
