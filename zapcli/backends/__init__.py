"""What a subagent runs (the `--cli` option): `zapcli` (the built-in agent),
`sh`, the agent CLIs claude, codex, gemini, opencode, qwen, pi (docs/explanation/rules.md#agent-clis), a plugin's
(entry points `zapcli.backends`), or a wrapper config.yaml's `backends:`
defines. `registry` names them all; each backend is one class with its facts
and both halves (spawn-time `prepare`, runner-time `run`), in a module that
stays light until `run` needs more.
"""
