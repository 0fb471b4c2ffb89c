"""A config file read before is not parsed again while its text is the same
(#32: YAML cost every spawn, poll and list ~15 ms of CPU), and what a
command makes of it is exactly what the parser gives: an edit of any size,
a value JSON cannot give back, an invalid file or a damaged copy all go to
the parser."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from zapcli import configfile
from zapcli.config import load_settings
from zapcli.errors import ConfigError

TEXT = ("timeout_s: 60\nmax_concurrent: 3\nmodel: openai/gpt-4o-mini\n"
        "hooks:\n  needs_input: notify-send zapcli \"$ZAPCLI_ID needs you\"\n"
        "trusted: []\n")

# a fresh process's settings, and whether it imported the YAML parser
PROBE = """
import json, sys
from zapcli.config import load_settings
s = load_settings()
print(json.dumps({"yaml": "yaml" in sys.modules, "timeout_s": s.timeout_s,
                  "max_concurrent": s.max_concurrent, "model": s.model, "hooks": s.hooks,
                  "where": s.where}))
"""


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    for name in ("state", "cfg"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("ZAPCLI_CONFIG_HOME", str(tmp_path / "cfg"))
    for var in ("ZAPCLI_TIMEOUT_S", "ZAPCLI_MAX_CONCURRENT", "ZAPCLI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "cfg" / "config.yaml"


def _fresh() -> dict:
    res = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_an_unchanged_file_is_read_without_the_parser_and_an_edit_is_parsed(cfg):
    cfg.write_text(TEXT)
    first = _fresh()
    assert first["yaml"] and first["timeout_s"] == 60 and first["max_concurrent"] == 3
    again = _fresh()
    assert not again["yaml"]  # kept: no YAML at all
    assert {**again, "yaml": True} == first  # the same settings, lines of each key included
    st = os.stat(cfg)
    cfg.write_text(TEXT.replace("max_concurrent: 3", "max_concurrent: 4"))  # same size
    os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same time
    edited = _fresh()
    assert edited["yaml"] and edited["max_concurrent"] == 4


def test_values_json_cannot_give_back_are_parsed_every_time(cfg):
    text = "when: 2026-12-05\nbits: !!binary aGk=\nnumbers: {1: one}\n"
    parsed = configfile.parse(cfg, text)
    assert [type(v) for _k, _line, v in parsed] == [__import__("datetime").date, bytes, dict]
    assert configfile.entries(cfg, text) is None  # not kept
    assert configfile.parse(cfg, text) == parsed
    plain = "timeout_s: 9\n"
    assert configfile.parse(cfg, plain) == [("timeout_s", 1, 9)]
    assert configfile.entries(cfg, plain) == [("timeout_s", 1, 9)]
    assert configfile.entries(cfg.with_name("other.yaml"), plain) is None  # by path as well as text


def test_an_invalid_file_is_never_kept_and_says_so_every_time(cfg):
    cfg.write_text("timeout_s: 10\n\tmax_kept: 5\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match="invalid YAML"):
            load_settings()
    assert configfile.entries(cfg, cfg.read_text()) is None
    cfg.write_text("timeout_s: soon\n")  # valid YAML, a value config refuses: refused every time
    for _ in range(2):
        with pytest.raises(ConfigError, match="config.yaml:1: key 'timeout_s'"):
            load_settings()


def test_a_damaged_or_foreign_copy_is_a_miss(cfg, tmp_path):
    cfg.write_text(TEXT)
    assert load_settings().timeout_s == 60
    copy = tmp_path / "state" / "cache" / "config.json"
    assert copy.is_file() and (copy.stat().st_mode & 0o777) == 0o600
    copy.write_text('{"v": 1, "files": {')  # cut short
    assert load_settings().timeout_s == 60
    doc = json.loads(copy.read_text())  # written again, whole
    assert doc["files"][str(cfg)]["text"] == TEXT
    copy.unlink()
    copy.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps({"v": 1, "files": {str(cfg): {
        "text": TEXT, "entries": [["timeout_s", 1, 5]]}}}))
    assert configfile.entries(cfg, TEXT) is None  # a link is not followed
    assert load_settings().timeout_s == 60
