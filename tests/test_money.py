"""Dollar amounts as people read them, alike in every command (a new user
saw `$0.0059 of $2.5000 (0%)` where the budgets guide shows `$1.02 of $2.50`)."""

from __future__ import annotations

import pytest

from zapcli.money import dollars


@pytest.mark.parametrize(("amount", "said"), [
    (0, "$0.00"), (2.5, "$2.50"), (1.02, "$1.02"), (1204, "$1,204.00"), (0.02, "$0.02"),
    (0.0059, "$0.0059"), (0.0123, "$0.0123"), (2.503, "$2.503"), (-1.5, "-$1.50"),
])
def test_amounts_keep_a_fraction_of_a_cent_and_drop_trailing_zeros(amount, said):
    assert dollars(amount) == said


def test_a_spend_past_its_cap_never_reads_as_the_cap():
    assert dollars(2.5004) != dollars(2.50)
