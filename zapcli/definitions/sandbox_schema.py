"""The `sandbox:` key of a definition: the network, the folders its commands
may write, the unix sockets they may reach with the network off, and the
cap of their scratch folder. Imports `zapcli.sizes` and the schema's checker.
"""

from __future__ import annotations

from typing import Any

import yaml

from zapcli import sizes
from zapcli.definitions.checker import BOOL_TAG, INT_TAG, STR_TAG, Checker, describe
from zapcli.definitions.model import SandboxSpec
from zapcli.definitions.schema import SANDBOX_KEYS

SANDBOX_EXAMPLE = "sandbox: {network: false, writable: [., build]}"


def sandbox(c: Checker, node: yaml.Node) -> SandboxSpec | None:
    """`sandbox: {network: bool, writable: [path, ...], sockets: [path, ...],
    scratch_size: size}` (docs/explanation/rules.md#sandbox)."""
    fields = c.mapping(node, "`sandbox`", SANDBOX_KEYS)
    if not isinstance(node, yaml.MappingNode):  # `mapping` said so
        return None
    network = False
    if "network" in fields:
        value = fields["network"][1]
        if isinstance(value, yaml.ScalarNode) and value.tag == BOOL_TAG:
            network = value.value.lower() in ("yes", "true", "on", "y")
        else:
            c.bad(value, f"`sandbox.network` must be true or false, not {describe(value)}",
                  "network: true lets its commands reach the network; false (the default) "
                  "leaves them a loopback of their own")
    writable = _sandbox_paths(c, fields, "writable", ("folders", "a folder"), SANDBOX_EXAMPLE,
                              "a path relative to the workspace, or absolute")
    sockets = _sandbox_paths(c, fields, "sockets", ("unix sockets (or folders of them)", "a path"),
                             "sandbox: {sockets: [/run/user/1000/docker.sock]}",
                             "an absolute path, or one under ~")
    for path in sockets or ():
        if not path.startswith(("/", "~/")):
            c.bad(fields["sockets"][1], f"`sandbox.sockets` takes absolute paths; {path!r} is not "
                  "one", "a socket outside the workspace, e.g. /run/user/1000/docker.sock")
    scratch_size = None
    if "scratch_size" in fields:
        value = fields["scratch_size"][1]
        try:
            if not isinstance(value, yaml.ScalarNode) or value.tag not in (STR_TAG, INT_TAG):
                raise ValueError(f"expected {sizes.EXAMPLE}, got {describe(value)}")
            scratch_size = sizes.parse(int(value.value) if value.tag == INT_TAG else value.value)
        except ValueError as exc:
            c.bad(value, f"`sandbox.scratch_size`: {exc}",
                  "the most its scratch folder ($TMPDIR, package caches) may hold; 0 for the "
                  "kernel's default, half the memory")
    return SandboxSpec(network=network, writable=writable, sockets=sockets or (),
                       scratch_size=scratch_size)


def _sandbox_paths(c: Checker, fields: dict[str, Any], key: str, what: tuple[str, str],
                   example: str, each: str) -> tuple[str, ...] | None:
    """`sandbox.<key>`: a list of paths (None when not declared). `what`:
    (the list's items, one item) in words."""
    if key not in fields:
        return None
    value = fields[key][1]
    if not isinstance(value, yaml.SequenceNode):
        c.bad(value, f"`sandbox.{key}` must be a list of {what[0]}, not {describe(value)}", example)
        return None
    paths = []
    for item in value.value:
        if not (isinstance(item, yaml.ScalarNode) and item.tag == STR_TAG) or not item.value.strip():
            c.bad(item, f"each entry of `sandbox.{key}` must be {what[1]}, not {describe(item)}",
                  each)
        elif "\x00" in item.value:
            c.bad(item, f"a path in `sandbox.{key}` holds a NUL character")
        else:
            paths.append(item.value)
    return tuple(dict.fromkeys(paths))
