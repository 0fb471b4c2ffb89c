"""Issue 24 item 7: the agent CLIs `make test` installs are usable as
documented — pinned exactly in the Makefile (and so in the installed
package.json: no `^` ranges), each pin the version its backend was tested
with, and the documentation (docs/how-to/agent-clis.md, the agent CLI
reference) naming `make agent-clis`, the download size, how to put them on
PATH and every pinned version."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import AGENT_CLIS_BIN
from zapcli.backends import registry

ROOT = Path(__file__).parents[2]
# npm package -> the backend that drives it
BACKENDS = {"@anthropic-ai/claude-code": "claude", "@openai/codex": "codex",
            "@google/gemini-cli": "gemini", "opencode-ai": "opencode",
            "@qwen-code/qwen-code": "qwen", "@mariozechner/pi-coding-agent": "pi"}


def _pins() -> dict[str, str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    line = re.search(r"^AGENT_CLIS\s*=(.*)$", text, re.M)
    assert line, "no AGENT_CLIS in the Makefile"
    return dict(p.rsplit("@", 1) for p in line.group(1).split())


def test_every_agent_cli_is_pinned_exactly_at_its_backends_tested_version():
    pins = _pins()
    assert set(BACKENDS) <= set(pins), pins
    for package, version in pins.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{package}@{version}: not an exact pin"
    for package, name in BACKENDS.items():
        tested = registry.get(name).tested
        assert tested and tested[0] == pins[package], (name, tested, pins[package])
    assert "--save-exact" in (ROOT / "Makefile").read_text(encoding="utf-8")
    installed = AGENT_CLIS_BIN.parent.parent / "package.json"
    if installed.exists():  # what npm wrote: the same versions, no ranges
        deps = json.loads(installed.read_text(encoding="utf-8"))["dependencies"]
        assert {p: deps.get(p) for p in pins} == pins, deps


def test_the_docs_say_how_to_get_and_use_them():
    howto = (ROOT / "docs" / "how-to" / "agent-clis.md").read_text(encoding="utf-8")
    reference = (ROOT / "docs" / "reference" / "agent-clis.md").read_text(encoding="utf-8")
    assert "make agent-clis" in howto and "1.6 GB" in howto
    assert ".cache/agent-clis/node_modules/.bin" in howto
    for package, version in _pins().items():
        if package in BACKENDS:
            assert f"{BACKENDS[package]} {version}" in howto, (package, version)
            assert f"| `{BACKENDS[package]}` | `{BACKENDS[package]}` | `{package}` | {version} |" in reference
