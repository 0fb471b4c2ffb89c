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


def test_validation_is_the_full_match_of_the_id_pattern():
    """is_valid checks without a regex (#12 speed); it accepts exactly what the pattern does."""
    import random
    import re

    pattern = re.compile(r"sa_[0-9]{8}_[0-9a-f]{8}")
    rng = random.Random(7)
    cands: list[object] = [None, 5, "", "sa_20261201_73f59b2e\n", "sa_2026120١_73f59b2e", "sa_²0261201_73f59b2e"]
    for _ in range(5000):
        chars = list("sa_20261201_73f59b2e")
        chars[rng.randrange(20)] = rng.choice("0a_Zs١²\n-f9A")
        cands.append("".join(chars)[: rng.choice([20, 20, 19, 21])])
    for value in cands:
        assert ids.is_valid(value) == (isinstance(value, str) and pattern.fullmatch(value) is not None), value


def test_a_folders_names_are_checked_together_as_one_by_one():
    """valid_among (a listing's thousand names at once) keeps exactly what is_valid keeps,
    wherever a bad name sits among good ones."""
    import random

    rng = random.Random(11)
    good = [ids.new_id() for _ in range(300)]
    assert ids.valid_among(good) == good
    assert ids.valid_among([]) == []
    for _ in range(400):
        chars = list(rng.choice(good))
        chars[rng.randrange(20)] = rng.choice("0a_Zs١²\n-f9A")
        bad = "".join(chars)[: rng.choice([20, 20, 19, 21])]
        names = list(good)
        names.insert(rng.randrange(len(names) + 1), bad)
        assert ids.valid_among(names) == [n for n in names if ids.is_valid(n)], bad
    assert ids.valid_among([good[0], 5, good[1]]) == [good[0], good[1]]  # type: ignore[list-item]
