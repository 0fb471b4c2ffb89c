"""The trail (docs/explanation/rules.md#the-trail): one append-only JSONL file per subagent.

Owns record encoding, the batched writer, the tolerant reader and retention.
Imports `zapcli.paths`, `zapcli.redact`, `zapcli.errors`; never the supervisor.
"""
