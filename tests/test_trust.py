"""`zapcli.trust` in process: what is hashed is all a loader can read."""

from __future__ import annotations


def test_every_loader_reads_no_more_than_what_trust_hashes():
    """A trusted file's hash covers its first READ_BYTES + 1 bytes; a loader
    reading more would use bytes nobody trusted."""
    from zapcli import config, trust
    from zapcli.capabilities import mcpconfig, skills
    from zapcli.definitions import yamlload

    for limit in (config.MAX_CONFIG_BYTES, mcpconfig.MAX_FILE_BYTES, yamlload.MAX_FILE_BYTES,
                  skills.MAX_SKILL_BYTES):
        assert limit <= trust.READ_BYTES


def test_the_loaders_paths_are_the_ones_trust_covers(tmp_path):
    from zapcli import trust
    from zapcli.capabilities import mcpconfig, skills
    from zapcli.definitions import layers

    assert mcpconfig.config_files(tmp_path)[1] == tmp_path / trust.MCP
    assert layers.workspace_dir(tmp_path) == tmp_path / trust.DEFINITIONS
    assert skills.skill_roots(tmp_path)[:3] == [tmp_path / r for r in trust.SKILLS]
