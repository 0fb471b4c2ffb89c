"""`rm` racing `continue` of one finished subagent (issue 28, the chaos
round): one of them wins, never both — a continuation whose first run's
trail was removed under it then failed (2 of 8 trials). Real processes
started together at a barrier."""

from __future__ import annotations

import subprocess
import sys

import pytest

ROUNDS = 8


@pytest.mark.timeout(300)
def test_rm_and_continue_at_once_never_both_succeed(zap, model):
    model([{"match": "", "turns": [{"text": "done."}] * (2 * ROUNDS + 4)}])
    both, outcomes = 0, []
    for _ in range(ROUNDS):
        sid = zap("spawn", "--", "say done").out.strip()
        assert zap("wait", "--timeout", "60", sid).returncode == 0
        go = ("import os, sys, time, runpy\n"
              "t = float(sys.argv[1])\n"
              "while time.time() < t: pass\n"
              "sys.argv = ['zapcli', *sys.argv[2:]]\n"
              "runpy.run_module('zapcli', run_name='__main__')\n")
        import time

        at = str(time.time() + 1.5)  # both imported and waiting: they start together
        rm = subprocess.Popen([sys.executable, "-c", go, at, "rm", sid], env=zap.env,
                              cwd=zap.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        cont = subprocess.Popen([sys.executable, "-c", go, at, "continue", sid, "again"],
                                env=zap.env, cwd=zap.cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        rm_out, rm_err = rm.communicate(timeout=60)
        c_out, c_err = cont.communicate(timeout=60)
        outcomes.append((rm.returncode, cont.returncode))
        if rm.returncode == 0 and cont.returncode == 0:
            both += 1
        if cont.returncode == 0:  # the continuation it started runs to its end
            new = c_out.decode().strip().split()[-1]
            assert zap("wait", "--timeout", "60", new).returncode == 0, zap("replay", new).out
    assert both == 0, f"both succeeded in {both} of {ROUNDS}: {outcomes}"
