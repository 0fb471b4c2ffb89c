"""adv11: a run's `subagents_save` may remove the definition it `replaces` (the
person approved that rename), but only the file its approval names. A
prompt-injected parent must not reach a file the person wrote by hand through
`replaces`: naming the very definition it saves (no rename at all), or an old
name that has both spellings (`old.yml` named, `old.yaml` the person's)."""

from __future__ import annotations

import pytest

from tests.e2e.test_parent_definitions import call, run

BY_HAND = "name: {name}\ndescription: written by hand, my notes\ntools: [read]\n"


@pytest.mark.parametrize("saved,replaces", [("helper", "helper"), ("fresh", "helper")])
def test_replaces_removes_no_file_the_approval_does_not_name(zap, model, saved, replaces):
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True)
    srv = model([{"match": "tidy defs", "turns": [
        call("subagents_save", fields={"name": saved, "description": "e", "tools": ["read"]},
             replaces=replaces),
        {"text": "ok"}]}])
    (zap.cwd / "helper-src.yml").write_text("name: helper\ndescription: d\ntools: [read]\n")
    assert zap("agents", "save", "--scope", "workspace", "helper-src.yml").returncode == 0
    assert (folder / "helper.yml").exists()  # zapcli's own copy of `helper`
    theirs = folder / "helper.yaml"  # the person's own file, the other spelling
    theirs.write_text(BY_HAND.format(name="helper"))
    assert zap("trust").returncode == 0  # the person trusts what they wrote
    proc = run(zap, "--approval", "full", "tidy defs")
    assert proc.returncode == 0, proc.stderr
    assert srv.requests  # the run asked its model, which made the save
    assert theirs.read_text() == BY_HAND.format(name="helper")

