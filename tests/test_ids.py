"""Ids are validated by full match before touching any path (C15)."""

import pytest

from zapcli import ids
from zapcli.errors import NotFound
from zapcli.trail import store


def test_new_ids_match_the_format():
    for _ in range(100):
        assert ids.is_valid(ids.new_id())


@pytest.mark.parametrize("bad", ["../../x", "/etc/passwd", "SA_20261130_ABCDEF12", "sa_20261130_abcdef12\n",
                                 ".", "..", "", "sa_20261130_abcdef1*", "sa_2026113_abcdef12", None, 5])
def test_bad_ids_never_become_paths(bad):
    assert not ids.is_valid(bad)
    with pytest.raises(NotFound):
        store.path_for(bad)
