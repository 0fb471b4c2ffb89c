"""An OTLP exporter's headers are secrets like keys (CASES-4 C47): the
credentials of a collector in OTEL_EXPORTER_OTLP_HEADERS never land in
clear in anything zapcli writes — the trail, the captured output that
printed them, a file of the subagent — nor in the runner's environment
block that any same-user process can read; yet they still reach the
collector."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Zap, record_of, wait_until
from tests.redteam.harness import Keys


def _files_holding(folder: Path, needle: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
            and needle.encode() in p.read_bytes()]


def test_an_exporters_headers_are_secrets_like_keys(zap: Zap, listener) -> None:
    keys = Keys()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": listener.url, "OTEL_BSP_SCHEDULE_DELAY": "100",
           "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{keys.token},x-team=blue"}
    # the command prints the whole variable, then the bare token alone
    task = ('printf "%s\\n" "$OTEL_EXPORTER_OTLP_HEADERS"; '
            'printf "%s\\n" "$OTEL_EXPORTER_OTLP_HEADERS" | sed "s/.*Bearer%20//; s/,.*//"; sleep 2')
    res = zap("spawn", "--cli", "sh", "--", task, env=env)
    assert res.returncode == 0, res.err
    sid = res.out.strip()
    start = wait_until(lambda: record_of(zap, sid, "start"), 30, 0.05)
    environ = Path(f"/proc/{start['pid']}/environ").read_bytes()  # type: ignore[index]
    assert keys.token.encode() not in environ, "the runner's environment block holds the exporter's credentials"
    assert zap("wait", sid, "--timeout", "60").returncode == 0
    assert not _files_holding(zap.home, keys.token), "an exporter's credentials were written in clear"
    assert zap("output", sid).out.count("***") >= 2
    assert wait_until(lambda: listener.saw(keys.token), 20, 0.2), "the collector never got its credentials"
