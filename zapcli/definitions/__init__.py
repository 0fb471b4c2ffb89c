"""Subagent definitions (docs/explanation/rules.md#definition-format–8.3): YAML loading, validation, layers, management.
May import zapcli.paths, zapcli.errors, zapcli.tools.registry (names); used by ops and capabilities.

Public API: `discover(workspace) -> Catalog`, `resolve(name, workspace) -> Definition`,
`parse_definition(text, file)`, `Definition`, `Diagnostic`, `effective_model(...)`;
management functions live in `zapcli.definitions.manage`.
"""

from zapcli.definitions.layers import DEFAULT_AGENT, Catalog, Entry, discover, resolve
from zapcli.definitions.model import Definition, Diagnostic, KnowledgeSource
from zapcli.definitions.schema import parse_definition
from zapcli.definitions.store import Switches, effective_model, model_origin
from zapcli.definitions.toolnames import GRANTABLE, canonical_tool

__all__ = [
    "DEFAULT_AGENT", "GRANTABLE", "Catalog", "Definition", "Diagnostic", "Entry",
    "KnowledgeSource", "Switches", "canonical_tool", "discover", "effective_model",
    "model_origin", "parse_definition", "resolve",
]
