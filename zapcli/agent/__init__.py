"""The tool-calling loop. Knows nothing of files or processes: it emits records
to a sink. May import `zapcli.agent.types`, `zapcli.providers`, `zapcli.tools`."""
