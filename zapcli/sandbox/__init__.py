"""The OS sandbox for the commands an agent runs (SPEC §18): bubblewrap with
its own pid, ipc and uts namespaces, a read-only file system but the
writable roots and the subagent's scratch folder, zapcli's own folders
hidden, the network on or off as the definition says.

Imports only the standard library: whoever calls it passes the paths in.
`policy` turns an approval mode and a definition's `sandbox:` into the
mounts; `bwrap` builds the command line and probes whether this machine
can run it; `session` is one long-lived sandbox whose helper (`inner`)
starts each command, so a call costs a fork, not a new set of namespaces.
"""

from __future__ import annotations

from zapcli.sandbox.policy import Policy, resolve

__all__ = ["Policy", "resolve"]
