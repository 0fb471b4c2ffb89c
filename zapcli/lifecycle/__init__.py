"""The lifecycle every verb and the runner share (docs/explanation/rules.md#lifecycle): status derivation
(a pure function) and the observer's actions, sessions, the daemonless queue
and launching through an executor, retention.

Imports `zapcli.trail`, `zapcli.executors`, `zapcli.config`, `zapcli.paths`;
never `zapcli.ops` (the verbs) or `zapcli.cli`, so the runner can use it.
"""
