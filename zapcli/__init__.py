"""zapcli: parallel LLM subagents as ordinary background OS processes.

The package is usable without its CLI: `zapcli.ops` holds what each command
does; `zapcli.cli` only parses arguments and renders results.
"""

__version__ = "0.1.0"
