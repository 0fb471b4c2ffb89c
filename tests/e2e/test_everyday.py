"""Everyday use (#12.12-13, 18-19): what a person meets in the first hour."""

from __future__ import annotations

import json

import pytest

from tests.conftest import sleep_marker


@pytest.mark.timeout(60)
def test_the_8_hex_tail_works_wherever_an_id_does(zap):
    sid = zap.spawn_sh("echo tail-works")
    tail = sid[-8:]
    assert zap("wait", tail).returncode == 0
    assert f"{sid}: completed" in zap("poll", tail).out
    assert "tail-works" in zap("output", tail).out
    assert f"replay of {sid}" in zap("replay", tail).out
    assert f"{sid}: already completed" in zap("kill", tail).out
    dep = zap("spawn", "--cli", "sh", "--after", tail, "--", "true")
    assert dep.returncode == 0, dep.err
    res = zap("poll", "--no-wait", "0badc0de")
    assert res.returncode == 1 and "0badc0de does not exist" in res.err and not res.out


@pytest.mark.timeout(60)
def test_errors_said_once_and_shaped_alike_numbers_without_noise(zap):
    sid = zap.spawn_sh("seq 1 3000")
    assert zap("wait", sid).returncode == 0
    res = zap("poll", "sa_20260101_0badc0de", sid)
    assert res.err.count("does not exist") == 1 and "does not exist" not in res.out
    assert f"zapcli output {sid} shows everything" in res.out  # the real id in the fold note
    doc = zap.json("poll", "sa_20260101_0badc0de", sid)["subagents"]
    assert doc[0]["error"] == {"code": "not_found", "message": "sa_20260101_0badc0de does not exist"}
    elapsed = doc[1]["elapsed_s"]
    assert elapsed == round(elapsed, 3)


@pytest.mark.timeout(60)
def test_poll_of_running_subagents_shows_the_last_line_each_wrote(zap):
    m = sleep_marker(60)
    a = zap.spawn_sh(f"echo starting; echo step two of five; sleep {m}")
    b = zap.spawn_sh(f"sleep {m}")
    from tests.conftest import wait_until
    wait_until(lambda: "step two" in zap("output", a).out, 10)
    res = zap("poll", "--no-wait", a, b)
    assert "2/2 still running" in res.out
    assert f"{a[-8:]} last wrote: step two of five" in res.out
    assert b[-8:] + " last wrote" not in res.out
    zap("kill", a, b, "--grace", "0")


def test_replay_indents_multi_line_results(zap, tmp_path):
    from zapcli.render.replay import record_line

    style, text = record_line({"seq": 7, "ts": "2026-01-01T00:00:00.000000Z", "type": "tool_result",
                               "ok": True, "content": "line one\nline two\n", "duration_ms": 3,
                               "approval_wait_ms": 5012})
    first, *rest = text.split("\n")
    assert "(3 ms, 5012 ms waiting for approval)" in first
    assert rest and all(r.startswith("     ") for r in rest), text


def test_cut_text_ends_with_an_ellipsis_at_a_word():
    from zapcli.render.common import one_line

    cut = one_line("reviews code for security problems and style issues " * 4, 60)
    assert cut.endswith("…") and len(cut) <= 60 and not cut[:-1].endswith(" ")
    assert cut[:-1].split()[-1] in "reviews code for security problems and style issues".split()


def test_agents_list_cuts_descriptions_with_an_ellipsis(zap):
    d = zap.cwd / ".zapcli" / "subagents"
    d.mkdir(parents=True)
    (d / "wordy.yml").write_text("name: wordy\ndescription: " + "explains every little thing " * 8 + "\n")
    zap("trust", check=True)
    out = zap("agents", "list").out
    line = next(x for x in out.splitlines() if "explains every" in x)
    assert line.rstrip().endswith("…")
    assert json.dumps(out)  # text only


@pytest.mark.timeout(60)
def test_a_utf8_task_in_argv_under_a_c_locale(zap):
    """#12.8: argv bytes are what the user typed."""
    res = zap("spawn", "--cli", "sh", "--", "echo héllo ✓", env={"LC_ALL": "C", "PYTHONUTF8": "0"})
    assert res.returncode == 0, res.err
    sid = res.out.strip()
    assert zap("wait", sid).returncode == 0
    assert zap("output", sid).out == "héllo ✓\n"


@pytest.mark.timeout(60)
def test_huge_numbers_and_deep_yaml_are_clear_errors(zap):
    """#12.7: no traceback, nothing created, the watching commands still work."""
    res = zap("spawn", "--cli", "zapcli", "--max-tokens", "9" * 25, "--", "hi", env={"ZAPCLI_MODEL": "m"})
    assert res.returncode == 2 and "--max-tokens" in res.err and "Traceback" not in res.err
    cfg = zap.home.parent / "config"
    cfg.mkdir(exist_ok=True)
    (cfg / "config.yaml").write_text("max_concurrent: " + "9" * 25 + "\n")
    res = zap("spawn", "--cli", "sh", "--", "true")
    assert res.returncode == 1 and "config.yaml:1: key 'max_concurrent'" in res.err
    (cfg / "config.yaml").write_text("a: " + "[" * 3000 + "]" * 3000 + "\n")
    res = zap("spawn", "--cli", "sh", "--", "true")
    assert res.returncode == 1 and "nested too deeply" in res.err and "Traceback" not in res.err
    for args in (("list",), ("kill", "--all"), ("poll", "--no-wait", "0badc0de")):
        res = zap(*args)
        assert res.returncode in (0, 1) and "nested too deeply" in res.err, (args, res.err)
        assert "Traceback" not in res.err
    assert not list(zap.home.glob("subagents/*")) and not list(zap.home.glob("sessions/*/all/*"))
    deep = zap.cwd / "deep.yml"
    deep.write_text("name: deep\ndescription: d\nprompt: " + "[" * 3000 + "]" * 3000 + "\n")
    res = zap("agents", "save", str(deep))
    assert res.returncode != 0 and "nested too deeply" in res.err and "Traceback" not in res.err


def test_values_that_are_not_utf8_are_refused_by_name_not_a_traceback(zap, tmp_path):
    """tryout: a folder whose name is not UTF-8 is a legal path; spawn from it,
    --cwd, --on-finish, --model and ZAPCLI_SESSION with such bytes gave a
    TypeError traceback. Each is one line naming it, nothing created."""
    import json as jsonlib
    import os
    import subprocess
    import sys

    odd = os.fsencode(str(tmp_path)) + b"/dir\xff"
    os.mkdir(odd)
    base = [sys.executable, "-m", "zapcli"]
    cases = [
        (dict(cwd=odd), [b"spawn", b"--cli", b"sh", b"--", b"pwd"], b"working folder's path"),
        ({}, [b"spawn", b"--json", b"--cli", b"sh", b"--cwd", odd, b"--", b"true"], b"--cwd is not valid UTF-8"),
        ({}, [b"spawn", b"--cli", b"sh", b"--on-finish", b"echo\xff", b"--", b"true"], b"--on-finish is not valid"),
        ({}, [b"spawn", b"--model", b"m\xff", b"--", b"hi"], b"--model is not valid UTF-8"),
        ({"session": b"\xff\xfe"}, [b"list"], b"ZAPCLI_SESSION is not valid UTF-8"),
    ]
    for extra, argv, words in cases:
        env = {os.fsencode(k): os.fsencode(v) for k, v in zap.env.items()}
        if "session" in extra:
            env[b"ZAPCLI_SESSION"] = extra["session"]
        res = subprocess.run([*map(os.fsencode, base), *argv], env=env, cwd=extra.get("cwd", zap.cwd),
                             capture_output=True, timeout=60)
        assert res.returncode == 2 and b"Traceback" not in res.stderr, (argv, res.stderr)
        assert words in res.stderr, (argv, res.stderr)
        if b"--json" in argv:
            assert jsonlib.loads(res.stdout)["error"]["code"] == "usage"
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").iterdir())
