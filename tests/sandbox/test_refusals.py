"""A write the sandbox refused is said with its path and the setting that
allows it (C40): a tool's own message often names no path, or does not say
the sandbox is why. Real bwrap, real commands."""

from __future__ import annotations

import os

from tests.sandbox.conftest import needs_bwrap
from zapcli.tools.shell import BashTool

pytestmark = needs_bwrap


def test_a_refused_write_under_the_home_names_the_path_and_the_setting(box):
    b = box()
    home = os.path.expanduser("~")
    b.ctx.env["HOME"] = home
    res = BashTool(b.jobs).run({"command": "mkdir -p ~/.cargo/registry/zap-probe"}, b.ctx)
    assert f"{home}/.cargo" in res.content and "writable_roots" in res.content, res.content
    assert "CARGO_HOME" in res.content, res.content  # the tool's own way out
    assert not os.path.exists(f"{home}/.cargo/registry/zap-probe")


def test_a_control_folder_is_said_to_be_kept_read_only(box):
    b = box()
    res = BashTool(b.jobs).run({"command": f"touch {b.ws}/.git/config"}, b.ctx)
    assert f"{b.ws}/.git/config is kept read-only" in res.content, res.content
    assert "writable_roots" not in res.content  # no setting lets a command write it


def test_a_full_scratch_folder_names_its_cap_and_the_setting(box):
    b = box(scratch_size=1 << 20)
    res = BashTool(b.jobs).run({"command": "head -c 4000000 /dev/zero > $TMPDIR/big"}, b.ctx)
    assert "No space left on device" in res.content, res.content
    assert "1 MiB" in res.content and "scratch_size" in res.content, res.content


def test_nothing_is_added_when_nothing_was_refused(box):
    b = box()
    res = BashTool(b.jobs).run({"command": "echo 'a Read-only file system, said by a program'"},
                               b.ctx)
    assert "sandbox:" not in res.content, res.content


def test_a_background_job_s_refused_write_is_said_by_task_output(box):
    from zapcli.tools.shell import TaskOutputTool

    b = box()
    home = os.path.expanduser("~")
    b.ctx.env["HOME"] = home
    started = BashTool(b.jobs).run({"command": "mkdir ~/.npm-zap-probe", "background": True}, b.ctx)
    assert started.ok, started.content
    res = TaskOutputTool(b.jobs).run({"job_id": "job_1", "wait_s": 20}, b.ctx)
    assert f"{home}/.npm-zap-probe is read-only here" in res.content, res.content
