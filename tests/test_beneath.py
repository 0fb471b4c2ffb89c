"""`zapcli.beneath`: the view the file tools open paths through — beneath a
root without following links out of it, writes through no link at all,
nothing of zapcli's own folders — with openat2 and with the O_NOFOLLOW walk
a kernel without it gets (each test runs both ways)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from zapcli import beneath
from zapcli.beneath import Refused, View


@pytest.fixture(params=["openat2", "walk"])
def how(request):
    saved = beneath._openat2[:]
    if request.param == "walk":
        beneath._openat2[:] = [None]
    elif beneath._load() is None:
        pytest.skip("this kernel has no openat2")
    yield request.param
    beneath._openat2[:] = saved


@pytest.fixture
def tree(tmp_path: Path):
    ws, out, state = tmp_path / "ws", tmp_path / "out", tmp_path / "state"
    for d in (ws / "src", out, state / "mcp", state / "subagents" / "sa_x.tmp"):
        d.mkdir(parents=True)
    (ws / "src" / "a.txt").write_text("inside\n")
    (out / "secret").write_text("outside\n")
    (state / "mcp" / "t.token").write_text("token\n")
    os.symlink("src/a.txt", ws / "in-link")  # stays inside
    os.symlink("../out/secret", ws / "out-rel")  # leaves by ..
    os.symlink(str(out / "secret"), ws / "out-abs")  # leaves by an absolute path
    os.symlink(str(state / "mcp"), ws / "to-state")
    os.symlink(str(out), ws / "dir-link")
    view = View((str(ws), str(state / "subagents" / "sa_x.tmp")), (str(state),),
                (str(state / "subagents" / "sa_x.tmp"),))
    return tmp_path, ws, out, state, view


def _read(view: View, path) -> str:
    with open(view.open_read(str(path)), encoding="utf-8") as fh:
        return fh.read()


def test_reads_follow_links_only_while_they_stay_inside(how, tree):
    tmp, ws, out, state, view = tree
    assert _read(view, ws / "src" / "a.txt") == "inside\n"
    assert _read(view, ws / "in-link") == "inside\n"
    for name in ("out-rel", "out-abs", "dir-link/secret"):
        with pytest.raises(Refused) as refused:
            view.open_read(str(ws / name))
        assert refused.value.errno == errno.EXDEV and str(out / "secret") in str(refused.value)
    assert _read(view, out / "secret") == "outside\n"  # named itself: read like any file outside


def test_nothing_of_zapcli_s_own_folders_is_opened_or_told_apart(how, tree):
    tmp, ws, out, state, view = tree
    for path in (state / "mcp" / "t.token", state / "mcp" / "missing", ws / "to-state" / "t.token",
                 tmp / "out" / ".." / "state" / "mcp" / "t.token"):
        with pytest.raises(Refused):
            view.open_read(os.path.normpath(path))
    with pytest.raises(Refused):
        view.open_read("/proc/self/environ")
    with pytest.raises(Refused):
        view.open_write(str(state / "mcp" / "new"))
    scratch = state / "subagents" / "sa_x.tmp" / "note"
    os.close(view.open_write(str(scratch))[0])  # the scratch folder is the agent's
    assert view.hides(str(scratch)) is None and view.hides(str(state / "x")) == str(state)


def test_writes_follow_no_link_and_make_their_folders_beneath(how, tree):
    tmp, ws, out, state, view = tree
    fd, created = view.open_write(str(ws / "new" / "deep" / "f.txt"))
    os.close(fd)
    assert created and (ws / "new" / "deep" / "f.txt").exists()
    for name in ("in-link", "dir-link/x", "dir-link/new/x", "out-abs"):
        with pytest.raises(Refused) as refused:
            view.open_write(str(ws / name))
        assert refused.value.errno == errno.ELOOP, name
    assert sorted(os.listdir(out)) == ["secret"] and (out / "secret").read_text() == "outside\n"


def test_a_folder_swapped_for_a_link_after_the_decision_is_refused(how, tree):
    tmp, ws, out, state, view = tree
    (ws / "d").mkdir()
    os.rename(ws / "d", ws / "d-was")
    os.symlink(str(out), ws / "d")  # what a RENAME_EXCHANGE does between decision and write
    with pytest.raises(Refused):
        view.open_write(str(ws / "d" / "f.txt"))
    assert sorted(os.listdir(out)) == ["secret"]


def test_outside_every_root_the_real_folder_is_used_and_the_last_link_refused(how, tree):
    tmp, ws, out, state, view = tree
    os.symlink(str(ws / "src"), out / "into-ws")
    fd, _ = view.open_write(str(out / "into-ws" / "b.txt"))  # lands in a root: opened beneath it
    os.close(fd)
    assert (ws / "src" / "b.txt").exists()
    os.symlink(str(tmp / "elsewhere"), out / "last")
    with pytest.raises(Refused):
        view.open_write(str(out / "last"))
    assert not (tmp / "elsewhere").exists()


def test_listings_name_nothing_hidden_or_beyond_a_link_out(how, tree):
    tmp, ws, out, state, view = tree
    assert view.visible(str(ws / "src" / "a.txt")) and view.visible(str(ws / "in-link"))
    assert not view.visible(str(ws / "to-state" / "t.token"))
    assert not view.visible(str(ws / "dir-link" / "secret"))
    assert view.visible(str(out / "secret")) and not view.visible(str(state / "mcp" / "t.token"))


def test_the_walk_refuses_dot_dot_out_of_its_root(tmp_path):
    (tmp_path / "root" / "a").mkdir(parents=True)
    (tmp_path / "x").write_text("x")
    fd = os.open(tmp_path / "root", os.O_PATH | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as out:
            beneath._nofollow_walk(fd, "a/../../x", os.O_RDONLY, 0, links=True)
        assert out.value.errno == errno.EXDEV
        inner = beneath._nofollow_walk(fd, "a/../a", os.O_RDONLY | os.O_DIRECTORY, 0, links=True)
        os.close(inner)
    finally:
        os.close(fd)
