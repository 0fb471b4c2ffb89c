"""A folder's agent-CLI settings shown empty in the CLI's sandbox, and what
zapcli reads of them itself (adversary round 13, on 8462f26).

gemini takes its environment from the first `.gemini/.env` or `.env` of the
folder it works in or one above. In its sandbox those read empty, and zapcli
reads the file itself, outside, to pass gemini what it would take from a
folder it does not trust: its auth variables (`env_file_auth`). zapcli
followed a link there wherever it led — so a cloned repository whose `.env`
is a link into the person's home (out of the sandbox's view) had zapcli read
that file and put its GOOGLE_API_KEY in the environment of the sandboxed CLI,
where the first command the model ran printed it.

Outside effect: the key of the person's other file in what reached the model.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.backends import clitest as ct
from tests.conftest import Zap
from tests.redteam.harness import Listener, _free_uid, as_root
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing import ScriptedServer

OTHER = "AIzaOtherProjectKey0123456789abcdefXYZ"


@needs_bwrap
def test_a_repositorys_env_link_into_the_home_hands_the_cli_no_key_from_there(
        zap: Zap, tmp_path: Path) -> None:
    ct.configure(zap, "gemini")
    home = tmp_path / "user-home"
    (home / "other-project").mkdir(parents=True)
    (home / "other-project" / ".env").write_text(f"GOOGLE_API_KEY={OTHER}\n")
    (zap.cwd / ".env").symlink_to(home / "other-project" / ".env")
    sid, seen = ct.one_step_run(zap, "gemini", ct.shell_call("echo G=$GOOGLE_API_KEY"), home,
                                "--approval", "full")
    assert "G=" in seen, ct.dump(zap, sid)  # the command ran and its output reached the model
    assert OTHER not in seen, ct.dump(zap, sid)


def test_a_env_link_inside_its_folder_is_still_read_one_leading_out_is_not(tmp_path: Path) -> None:
    from zapcli.backends.clis.gemini import env_file_auth

    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / "config").mkdir(parents=True)
    home.mkdir()
    (repo / "config" / "dev.env").write_text("GEMINI_API_KEY=in-the-repo\n")
    (home / "elsewhere.env").write_text(f"GOOGLE_API_KEY={OTHER}\n")
    (repo / ".env").symlink_to("config/dev.env")
    assert env_file_auth(str(repo), {"HOME": str(home)}) == {"GEMINI_API_KEY": "in-the-repo"}
    (repo / ".env").unlink()
    (repo / ".gemini").symlink_to(home)  # the folder itself a link out: its .env too
    (home / ".env").write_text(f"GOOGLE_API_KEY={OTHER}\n")
    assert env_file_auth(str(repo), {"HOME": str(home)}) == {}


@needs_bwrap
@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom"])
def test_a_env_link_into_the_kernels_files_holds_nothing_up(zap: Zap, tmp_path: Path,
                                                            target: str) -> None:
    """A repository's `.env` is a link to /dev/zero or /dev/urandom: read for
    ever, growing until memory runs out. The sandbox makes /dev anew inside
    and zapcli left a link there uncovered, so gemini, reading it as its
    environment, hung to its deadline (and grew). Now the start is refused at
    once, as is a link into /proc or /sys (`kernel_way`), which no mount of
    zapcli's can show empty either. `--approval full`: a control file that
    is a link is refused otherwise."""
    ct.configure(zap, "gemini")
    (zap.cwd / ".env").symlink_to(target)
    rules = [{"match": "SUMMARIZE", "turns": [{"text": "Summary: a demo project."}]}]
    with ScriptedServer(rules, protocol=ct.PROTOCOL["gemini"]) as srv:
        env = ct.cli_env("gemini", srv, home=tmp_path / "user-home")
        started = time.monotonic()
        sid = ct.spawn(zap, "gemini", "SUMMARIZE the README", env, "--approval", "full",
                       "--timeout", "60")
        zap("wait", sid, "--timeout", "90", timeout=120)
        took = time.monotonic() - started
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert doc["status"] == "failed" and took < 30, (took, ct.dump(zap, sid))
    assert srv.requests == [], ct.dump(zap, sid)  # nothing ran
    assert os.readlink(zap.cwd / ".env") == target  # the person's file, untouched


def test_a_link_to_dev_null_or_within_the_folder_is_no_kernel_way(tmp_path: Path) -> None:
    from zapcli.backends.cli_sandbox import kernel_way

    (tmp_path / "a").symlink_to("/dev/null")
    (tmp_path / "b").symlink_to("real.env")
    (tmp_path / "c").symlink_to("/dev")  # a folder link: what lies in it is the kernel's
    (tmp_path / "d").symlink_to("../" * 30 + "dev/urandom")
    (tmp_path / "e").symlink_to("/proc/self/fd/1")  # inside: the CLI's own, not zapcli's
    assert [kernel_way(str(tmp_path), n) for n in ("a", "b", "c/zero", "d", "e", "plain")] == \
        [None, None, "/dev/zero", "/dev/urandom", "/proc", None]
    # a workspace the sandbox mounts in /dev/shm: its own files are the host's
    assert kernel_way("/dev/shm/work", ".env", ("/dev/shm/work",)) is None


@needs_bwrap
@pytest.mark.xfail(strict=True, reason=(
    "open (adversary round 13): the sandbox covers a folder's CLI settings that exist when "
    "zapcli looks; one made between that look and the CLI's read (by a sibling subagent "
    "writing in the same folder) is read as it is"))
def test_a_env_file_made_after_the_look_sends_the_key_nowhere(zap: Zap, tmp_path: Path,
                                                              listener: Listener) -> None:
    """Another subagent working in the same folder (its sandbox lets it write
    there) writes `sub/.env` the moment gemini's sandbox is decided (its
    `sandbox` diagnostic is in the trail): before the CLI has started. The
    top's `.env` is a control file every sandbox holds read-only; a
    subfolder's only the sandboxes whose folder it is (gemini's here: a
    placeholder made after the look, whose file the sibling, working at the
    top, writes). A placeholder covered with /dev/null would not close it:
    the sibling can unlink it, and unlinking a mount point in another
    namespace detaches that mount. Proposed fix (the class): the
    CLI must not take a folder's `.env` at all in its sandbox (an option of
    its own, or a cwd whose folders nobody else writes), or each sandbox
    holds those names read-only as it holds control files."""
    ct.configure(zap, "gemini")
    (zap.cwd / "sub").mkdir()
    planted = zap.cwd / "sub" / ".env"
    rules = [{"match": "SUMMARIZE", "turns": [{"text": "Summary: a demo project."}]}]
    done = threading.Event()

    def sibling(sid: str) -> None:
        while not done.is_set():
            try:
                if any(r.get("name") == "gemini" for r in ct.records(zap, sid, "diagnostic")):
                    planted.write_text(f"GOOGLE_GEMINI_BASE_URL={listener.url}/raced\n")
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.005)

    with ScriptedServer(rules, protocol=ct.PROTOCOL["gemini"]) as srv:
        env = ct.cli_env("gemini", srv, home=tmp_path / "user-home")
        env.pop("GOOGLE_GEMINI_BASE_URL")  # the person's own: the CLI's default endpoint
        sid = ct.spawn(zap, "gemini", "SUMMARIZE the README", env, "--approval", "workspace",
                       "--timeout", "30", "--cwd", str(zap.cwd / "sub"))
        writer = threading.Thread(target=sibling, args=(sid,), daemon=True)
        writer.start()
        zap("wait", sid, "--timeout", "60", timeout=90)
        done.set()
        writer.join(5)
    assert planted.exists()  # the sibling wrote it in time
    assert not listener.saw(ct.KEYS["gemini"]), [h["path"] for h in listener.hits]
    assert listener.hits == [], [h["path"] for h in listener.hits]


@needs_bwrap
@as_root
def test_another_users_env_above_the_workspace_hands_the_cli_no_key(zap: Zap,
                                                                   tmp_path: Path) -> None:
    """The workspace lies in a folder others may write in (/tmp, a team's
    share): another local user leaves a `.env` there holding a key of their
    own. zapcli read it for gemini (the first `.env` above the folder) and
    put its GOOGLE_API_KEY in gemini's environment, which gemini prefers to
    GEMINI_API_KEY: the person's conversation went out under the other
    user's key (whose project's logs show it)."""
    uid, lock = _free_uid()
    try:
        ct.configure(zap, "gemini")
        theirs = tmp_path / ".env"
        theirs.write_text(f"GOOGLE_API_KEY={OTHER}\n")
        os.chown(theirs, uid, uid)
        sid, seen = ct.one_step_run(zap, "gemini", ct.shell_call("echo G=$GOOGLE_API_KEY"),
                                    tmp_path / "user-home", "--approval", "full")
        assert "G=" in seen, ct.dump(zap, sid)
        assert OTHER not in seen, ct.dump(zap, sid)
    finally:
        os.close(lock)
