"""`bwrap.probe` tells apart what a machine lacks: the whole sandbox, only a
network namespace (tests/redteam/test_sandbox_hardening.py makes the kernel
refuse one for real), or only a tmpfs size (bubblewrap before 0.6: played
here by a wrapper that refuses `--size` as such a bwrap does, since no old
bwrap is installed)."""

from __future__ import annotations

import os

from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.sandbox import bwrap

pytestmark = needs_bwrap


def test_a_bwrap_that_cannot_size_a_tmpfs_still_sandboxes(tmp_path, monkeypatch):
    old = tmp_path / "bwrap"
    old.write_text("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --size ] && "
                   "{ echo 'bwrap: Unknown option --size' >&2; exit 1; }; done\n"
                   f"exec {FOUND.program} \"$@\"\n")
    os.chmod(old, 0o755)
    monkeypatch.setenv("ZAPCLI_BWRAP", str(old))
    found = bwrap.probe(tmp_path / "probe.json", fresh=True)
    assert found.ok and found.network and not found.size, found
    again = bwrap.probe(tmp_path / "probe.json")  # and the cached answer says the same
    assert (again.ok, again.network, again.size) == (True, True, False)

