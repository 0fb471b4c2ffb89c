"""The code examples of the documentation (docs/**/*.md and README.md), read
as a reader meets them, and what it takes to run each one as written.

A fenced block's language says what it is:
- `sh`/`bash`: commands. A page's command blocks run in order in ONE bash
  session (variables set in one block are there in the next), with
  `set -e -o pipefail`: every command must succeed;
- `python`: a program, run with `python` at that point of the session;
- a block with `title="PATH"` (any language) is a file the reader writes:
  it is written at that point of the session, then used by what follows;
- `yaml`, `json`, `toml`, `jsonl` without a title: read by what reads them
  (`check`, below);
- `text`: output or a synopsis, never something to type; not run.

An HTML comment right above a block (invisible on the site) says more:
- `<!-- not-run: REASON -->` — cannot run here (a real API key, a cluster
  of machines); REASON is required and listed by the test;
- `<!-- needs: PROGRAM -->` — runs only where PROGRAM is on PATH (the agent
  CLIs `make test` installs); otherwise it is skipped, saying so;
- `<!-- exit: N -->` — the block's last command exits N (e.g. `wait`'s 3);
- `<!-- check: KIND -->` — what reads a data block: `config` (zapcli's
  config.yaml), `definition` (a subagent definition; a fragment is checked
  inside a minimal one), `mcp` (an mcp.json), `script` (a scripted-server
  script), `ray-cluster` (Ray's cluster launcher schema), `json`, `toml`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELLS = {"sh", "bash", "shell"}
DATA = {"yaml", "yml", "json", "toml", "jsonl"}
KNOWN = SHELLS | DATA | {"python", "text"}
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*(?P<key>[a-z-]+)\s*:\s*(?P<value>.*?)\s*-->\s*$")
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    title: str | None = None
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def not_run(self) -> str | None:
        return self.directives.get("not-run")


def pages() -> list[Path]:
    """Every page whose examples are run: the README and the docs site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent, info = m.group("fence"), m.group("indent"), m.group("info").strip()
        directives: dict[str, str] = {}
        j = i - 1
        while j >= 0 and (d := _DIRECTIVE.match(lines[j])):
            directives.setdefault(d.group("key"), d.group("value"))
            j -= 1
        body: list[str] = []
        k = i + 1
        while k < len(lines) and not (lines[k].strip().startswith(fence[0] * len(fence))
                                      and set(lines[k].strip()) == {fence[0]}):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k])
            k += 1
        title = _TITLE.search(info)
        lang = info.split()[0].strip("{}.").lower() if info else ""
        out.append(Block(page, i + 1, lang, "\n".join(body) + "\n",
                         title.group("title") if title else None, directives))
        i = k + 1
    return out
