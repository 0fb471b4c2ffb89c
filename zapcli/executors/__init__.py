"""Where a subagent's runner runs (SPEC §15): this machine, or a cluster.

Imports `zapcli.executors.base`; each executor module imports its own engine
lazily (the Ray client only in `ray`), so no command pays for one it does not use.
"""
