"""A page's example that starts the scripted model server and points zapcli
at it names the model too (`ZAPCLI_MODEL=scripted` or `--model`), as
docs/how-to/test-offline.md does: the example then runs as shown for a
reader with no model configured. The run of every page's examples
(test_examples.py) cannot see this — its reader has `ZAPCLI_MODEL` set.

Before: docs/how-to/budgets.md's rate-limit example (and approvals.md's)
set only OPENAI_BASE_URL, and `zapcli spawn` said `no model configured`."""

from __future__ import annotations

import re

import pytest

from tests.docs.blocks import ROOT, SHELLS, blocks, pages

STARTS_SERVER = "zapcli.testing.scripted_server"
USES_ZAPCLI = re.compile(r"\bzapcli (spawn|run)\b")


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_an_example_with_its_own_model_server_names_the_model(page):
    unnamed = [b.where for b in blocks(page)
               if b.lang in SHELLS and not b.not_run and STARTS_SERVER in b.text
               and "OPENAI_BASE_URL=" in b.text and USES_ZAPCLI.search(b.text)
               and "ZAPCLI_MODEL=" not in b.text and "--model" not in b.text]
    assert not unnamed, (f"these start the scripted server but name no model, so they fail for a "
                         f"reader with none configured (set ZAPCLI_MODEL=scripted): {unnamed}")


@pytest.mark.timeout(60)
def test_the_tutorials_start_up_loop_ends_and_shows_why_when_the_server_fails(tmp_path):
    """A reader's `fleet.json` with a mistake: the server ends at once with a
    clear error in `.server.log`, and `until [ -s .port ]` waited forever.
    The tutorial's block, run as written against a broken script, ends and
    shows that error."""
    import os
    import subprocess
    import sys

    page = ROOT / "docs" / "tutorial" / "first-fleet.md"
    [start] = [b for b in blocks(page) if b.lang in SHELLS and STARTS_SERVER in b.text]
    (tmp_path / "fleet.json").write_text('[{"match": "x", "turns": [{"txet": "typo"}]}]')
    head = start.text.split("export OPENAI_BASE_URL")[0]  # the start and its loop, not zapcli
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", head], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=30)
    assert "txet" in done.stdout, (done.stdout, done.stderr)  # the server's own error, shown
