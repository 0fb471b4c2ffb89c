"""A whole program in the sandbox (`zapcli.sandbox.whole`, issue 27 item 10):
the real bubblewrap over a policy `whole` made — the user's home out of view
but for what the program needs, its private home writable, /tmp its own."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.sandbox.conftest import boxed, needs_bwrap
from zapcli.sandbox import placeholders
from zapcli.sandbox.policy import resolve
from zapcli.sandbox.whole import in_view, install_root, whole


def _layout(tmp: Path) -> dict[str, Path]:
    home = tmp / "home"
    paths = {"home": home, "ws": home / "src" / "proj", "tool": home / ".local" / "bin" / "tool",
             "secret": home / ".ssh" / "id_fake", "private": tmp / "state" / "sa_x.home",
             "scratch": tmp / "state" / "sa_x.tmp", "state": tmp / "state"}
    for key in ("ws", "private", "scratch"):
        paths[key].mkdir(parents=True)
    paths["secret"].parent.mkdir(parents=True)
    paths["secret"].write_text("THE-HOME-SECRET\n")
    paths["tool"].parent.mkdir(parents=True)
    paths["tool"].write_text("#!/bin/sh\necho tool-ran\n")
    paths["tool"].chmod(0o755)
    (paths["tool"].parent / "other-script").write_text("OTHER-SCRIPT\n")
    return paths


def _policy(p: dict[str, Path], mode: str = "workspace", **kw: object):
    base, _ = resolve(mode, workspace=str(p["ws"]), scratch=str(p["scratch"]),
                      hidden=(str(p["state"]),), **kw)  # type: ignore[arg-type]
    return whole(base, home=str(p["private"]), hide=[str(p["home"])],
                 show=[install_root(str(p["tool"])), str(p["ws"])])


def _run(policy, script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    held = placeholders.hold(policy)  # the control files that do not exist yet, held read-only
    try:
        return boxed(held.policy, ["sh", "-c", script], cwd=cwd, capture_output=True, text=True,
                     timeout=60)
    finally:
        held.release()


@needs_bwrap
def test_the_home_is_out_of_view_but_what_the_program_needs(tmp_path: Path) -> None:
    p = _layout(tmp_path)
    policy, notes = _policy(p)
    assert notes == []
    res = _run(policy, f"""
        cat {p['secret']} 2>&1; test -e {p['home']}/.ssh && echo SSH-FOLDER-SEEN
        {p['tool']}; cat {p['tool'].parent}/other-script 2>&1
        echo in-ws > {p['ws']}/made; echo in-home > {p['private']}/made
        echo in-tmp > /tmp/zapcli-whole-test; ls -A /tmp
        echo elsewhere > {p['home']}/made 2>&1 || echo refused
    """, p["ws"])
    assert "THE-HOME-SECRET" not in res.stdout and "SSH-FOLDER-SEEN" not in res.stdout, res.stdout
    assert "tool-ran" in res.stdout  # the program itself is there ...
    assert "OTHER-SCRIPT" not in res.stdout  # ... and not the rest of its folder
    assert (p["ws"] / "made").read_text() == "in-ws\n"
    assert (p["private"] / "made").read_text() == "in-home\n"
    assert not Path("/tmp/zapcli-whole-test").exists()  # /tmp was its own
    assert "refused" in res.stdout and not (p["home"] / "made").exists()


@needs_bwrap
def test_a_workspace_in_the_home_that_is_not_writable_is_still_seen(tmp_path: Path) -> None:
    p = _layout(tmp_path)
    (p["ws"] / "README").write_text("readable\n")
    out = p["ws"] / "out"
    out.mkdir()
    policy, _ = _policy(p, writable=[str(out)])  # a definition that writes only in out/
    assert not in_view(policy, str(p["secret"])) and in_view(policy, str(p["ws"] / "README"))
    res = _run(policy, f"cat {p['ws']}/README; echo x > {p['ws']}/nope 2>&1 || echo refused; "
                       f"echo y > {out}/yes", p["ws"])
    assert "readable" in res.stdout and "refused" in res.stdout, res
    assert (out / "yes").exists() and not (p["ws"] / "nope").exists()


def test_a_home_that_is_a_writable_root_stays_in_view_and_says_so(tmp_path: Path) -> None:
    p = _layout(tmp_path)
    base, _ = resolve("workspace", workspace=str(p["home"]), scratch=str(p["scratch"]))
    policy, notes = whole(base, home=str(p["private"]), hide=[str(p["home"])])
    assert str(p["home"]) not in policy.hidden and in_view(policy, str(p["secret"]))
    assert notes and "stays in view" in notes[0]


def test_install_root_is_the_package_tree_or_the_file_alone(tmp_path: Path) -> None:
    pkg = tmp_path / "prefix" / "lib" / "node_modules" / "@x" / "cli" / "bin"
    pkg.mkdir(parents=True)
    (pkg / "cli.js").write_text("")
    link = tmp_path / "prefix" / "bin"
    link.mkdir()
    (link / "cli").symlink_to(pkg / "cli.js")
    assert install_root(str(link / "cli")) == str(tmp_path / "prefix" / "lib" / "node_modules")
    (link / "plain").write_text("")
    assert install_root(str(link / "plain")) == str(link / "plain")
