"""Other agent CLIs as backends (docs/explanation/rules.md#agent-clis): claude, codex, gemini, opencode, qwen, pi.

One module per CLI holds its `CliBackend` subclass (its facts and how it is
started) and its event parser (how its output becomes trail records);
`base` holds the shapes they share and `CliBackend`; `zapcli.backends.registry`
has one line per CLI. Imports only the standard library, `zapcli.backends.base`
and `zapcli.backends.clis.base` — except `approval_server`, claude's
permission hook, a process of its own (mcp SDK, the trail).
"""
