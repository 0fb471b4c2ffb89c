"""The README's offline snippet runs as written (issue 28 item 4): the
scripted server started with `--background` prints `export` lines for the
shell to `eval` — no port to copy by hand — then `zapcli spawn` reaches it
and the server is stopped by the pid it exported."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from tests.conftest import REPO, wait_until

SNIPPET = """
set -e
cat > script.json <<'JSON'
[{"match": "docs", "turns": [{"text": "the docs are fine."}]}]
JSON
eval "$(PY -m zapcli.testing.scripted_server --script script.json --background)"
id=$(ZAPCLI_MODEL=scripted PY -m zapcli spawn "check the docs")
PY -m zapcli wait --timeout 60 "$id" >/dev/null
PY -m zapcli output "$id"
echo "url=$OPENAI_BASE_URL pid=$SCRIPTED_SERVER_PID"
kill "$SCRIPTED_SERVER_PID"
"""


@pytest.mark.timeout(120)
def test_the_offline_snippet_needs_no_hand_edited_port(zap):
    """On main: `--background` is not an option (exit 2): the snippet said
    `OPENAI_BASE_URL=http://127.0.0.1:PORT/v1`, a port to copy by hand."""
    env = {k: v for k, v in zap.env.items() if k not in ("OPENAI_BASE_URL", "ZAPCLI_MODEL")}
    proc = subprocess.run(["sh", "-c", SNIPPET.replace("PY", sys.executable)], cwd=zap.cwd,
                          env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=100)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "the docs are fine." in proc.stdout
    url, pid = proc.stdout.strip().splitlines()[-1].split()
    assert url.startswith("url=http://127.0.0.1:") and url.endswith("/v1")
    server = int(pid.removeprefix("pid="))
    wait_until(lambda: not psutil.pid_exists(server) or
               psutil.Process(server).status() == psutil.STATUS_ZOMBIE, 10)


def test_background_reports_a_bad_script_in_the_foreground(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[{\"turns\": 3}]")
    proc = subprocess.run([sys.executable, "-m", "zapcli.testing.scripted_server", "--script",
                           str(bad), "--background"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and proc.stdout == "" and "bad.json" in proc.stderr
