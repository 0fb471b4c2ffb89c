"""Built-in tools the model may be granted (SPEC §7.3): bash and its jobs, files, search, web, todo.
Imports: stdlib, psutil, zapcli.agent.types. Start at `zapcli.tools.registry`.

Each tool has `spec` (a ToolSpec) and `run(args, ctx) -> ToolResult`, and never
raises: failures are `ok=False` results that tell the model what to do next.
"""
