"""Dollar amounts as a person reads them: `$2.50`, `$1,204.00`, `$0.0059`.
Imports nothing (a kernel module: the budget, the renderers and the fleet
view all say amounts).

Up to four decimals — a cheap model's call costs a fraction of a cent, and
a budget's figures must not round a spend onto its cap — with trailing
zeros dropped down to two (`$2.50`, `$0.02`, `$0.0123`, `$2.503`).
Machine output (`--json`, the trail) keeps the number itself.
"""

from __future__ import annotations


def dollars(amount: float) -> str:
    """`amount` (US dollars) for a person."""
    whole, _, cents = f"{amount:,.4f}".partition(".")
    cents = cents.rstrip("0").ljust(2, "0")
    return f"${whole}.{cents}".replace("$-", "-$")
