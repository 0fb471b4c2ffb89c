"""Capabilities (docs/explanation/rules.md#undeclared-means-unreachable–8.5): definition → Grant, capability tools, prompt assembly.
May import zapcli.definitions, zapcli.paths; zapcli.agent.types and `mcp` only in open_tools.

Public API: `build_grant(definition, workspace, available_tools=None) -> Grant`,
`Grant.to_dict()/from_dict()`, `open_tools(grant, approver=None) -> CapabilityTools`,
`assemble_prompt(definition, grant) -> str`.

The names load on first use (PEP 562): a spawn that builds a grant
(`zapcli.capabilities.grant`) does not load the prompt's assembly.
"""

from zapcli import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.capabilities.grant import CapabilityTools, Grant, build_grant, open_tools
    from zapcli.capabilities.prompt import FRAMEWORK, assemble_prompt

_WHERE = {"CapabilityTools": "grant", "Grant": "grant", "build_grant": "grant", "open_tools": "grant",
          "FRAMEWORK": "prompt", "assemble_prompt": "prompt"}

__all__ = ["FRAMEWORK", "CapabilityTools", "Grant", "assemble_prompt", "build_grant", "open_tools"]


__getattr__ = lazy.names(__name__, _WHERE, globals())  # each public name from its module on first use
