"""The docs' picture of `zapcli top` is made, not drawn: docs/_hooks/top_screen.py
starts a real fleet, runs the real `zapcli top` in tmux and renders what the
terminal showed. Here it makes the SVG (the docs build photographs it with
Chromium) and the screen it shows is checked."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from tests.conftest import REPO

pytest.importorskip("textual", reason="the tui extra is not installed (make install does it)")


@pytest.mark.timeout(240)
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (make test installs it)")
def test_the_docs_picture_of_top_is_made_from_the_real_screen(tmp_path):
    spec = importlib.util.spec_from_file_location("top_screen", REPO / "docs/_hooks/top_screen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    svg = module.make(tmp_path).read_text()
    # ENDED is not asked: the picture is taken once the request shows, and on a loaded machine
    # the quick shell subagents may still be running then (the groups are what matter)
    for words in ("NEEDS", "awaiting", "approval", "RUNNING", "QUEUED", "zapcli/fixer",
                  "zapcli/explorer", "login-timeout", "Approve", "Deny"):
        assert words in svg, words
