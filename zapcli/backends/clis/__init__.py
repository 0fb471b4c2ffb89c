"""Other agent CLIs as backends (SPEC §13): claude, codex, gemini, opencode.

One module per CLI holds its `Adapter` (how it is started) and its event
parser (how its output becomes trail records); `base` holds the shapes they
share; `registry` which exist and how each is found. Imports only the
standard library and `zapcli.backends.clis.base` — except `approval_server`,
claude's permission hook, a process of its own (mcp SDK, the trail).
"""
