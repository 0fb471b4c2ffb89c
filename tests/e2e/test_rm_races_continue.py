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
    # the finished subagents the rounds race over, made together up front
    sids = [zap("spawn", "--", "say done").out.strip() for _ in range(ROUNDS)]
    assert zap("wait", "--timeout", "90", *sids).returncode == 0
    for sid in sids:
        # Both start Python, say so, and block on their stdin; both are let go
        # by one write each, back to back: they start together (a barrier, not
        # a guessed head start).
        go = ("import os, sys, runpy\n"
              "print('ready', flush=True)\n"
              "sys.stdin.buffer.read(1)\n"
              "null = os.open(os.devnull, os.O_RDONLY)\n"
              "os.dup2(null, 0)\n"
              "sys.argv = ['zapcli', *sys.argv[1:]]\n"
              "runpy.run_module('zapcli', run_name='__main__')\n")
        rm = subprocess.Popen([sys.executable, "-c", go, "rm", sid], env=zap.env,
                              cwd=zap.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        cont = subprocess.Popen([sys.executable, "-c", go, "continue", sid, "again"],
                                env=zap.env, cwd=zap.cwd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for p in (rm, cont):
            assert p.stdout.readline() == b"ready\n", p.communicate(timeout=60)
        for p in (rm, cont):
            p.stdin.write(b"g")
            p.stdin.flush()
        rm_out, rm_err = rm.communicate(timeout=60)
        c_out, c_err = cont.communicate(timeout=60)
        outcomes.append((rm.returncode, cont.returncode))
        if rm.returncode == 0 and cont.returncode == 0:
            both += 1
        if cont.returncode == 0:  # the continuation it started runs to its end
            new = c_out.decode().strip().split()[-1]
            assert zap("wait", "--timeout", "60", new).returncode == 0, zap("replay", new).out
    assert both == 0, f"both succeeded in {both} of {ROUNDS}: {outcomes}"
