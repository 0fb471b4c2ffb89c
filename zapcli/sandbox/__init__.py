"""The OS sandbox for the commands an agent runs (docs/explanation/rules.md#sandbox): bubblewrap with
its own pid, ipc and uts namespaces, a read-only file system but the
writable roots and the subagent's scratch folder (a capped tmpfs), zapcli's
own folders hidden, the network on or off as the definition says (and
with it off, the host's unix sockets out of reach).

Imports only the standard library: whoever calls it passes the paths in.
`policy` turns an approval mode and a definition's `sandbox:` into the
mounts; `bwrap` builds the command line and probes whether this machine
can run it; `sockets` says what to hide with the network off; `caches`
where package managers keep theirs; `deeper` finds the control files that
exist below a writable root's top; `links` finds protected names a mount
cannot pin; `refusals` explains a write the sandbox refused; `session` is
one long-lived sandbox whose helper (`inner`, its pid 1) starts each
command, so a call costs a fork, not a new set of namespaces.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.sandbox.policy import Policy, resolve

__all__ = ["Policy", "resolve"]


def __getattr__(name: str) -> object:
    """`Policy` and `resolve`, imported from `policy` on first use (PEP 562): a
    spawn that only reads the probe's kept answer loads no policy."""
    if name not in __all__:
        raise AttributeError(f"module 'zapcli.sandbox' has no attribute {name!r}")
    from zapcli.sandbox import policy

    value = getattr(policy, name)
    globals()[name] = value
    return value
