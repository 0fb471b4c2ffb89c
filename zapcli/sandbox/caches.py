"""Where package managers keep their caches in the sandbox (C40). Imports
only the standard library.

The home is read-only in the sandbox, and pip, npm, uv and the like keep
their caches there: `npm install` then fails with messages that name no
path. Every command in the sandbox gets its caches in `<scratch>/.cache`
instead — the XDG cache folder (pip, uv, go, pnpm, deno, Hugging Face and
most others follow it) and the variables of the tools that do not — so
installs work, count against the scratch folder's cap and go with it. A
variable the command's environment already points at a writable folder
(a writable root or the scratch folder) is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

FOLDER = ".cache"
# variable -> folder under <scratch>/.cache ("" for that folder itself)
VARIABLES = {
    "XDG_CACHE_HOME": "",
    "PIP_CACHE_DIR": "pip",
    "UV_CACHE_DIR": "uv",
    "npm_config_cache": "npm",
    "YARN_CACHE_FOLDER": "yarn",
    "BUN_INSTALL_CACHE_DIR": "bun",
}


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def env(scratch: str, given: Mapping[str, str], writable: Iterable[str]) -> dict[str, str]:
    """The cache variables to set for a command in the sandbox whose
    environment is `given` (only those that change)."""
    if not scratch:
        return {}
    base = os.path.join(scratch, FOLDER)
    ok = [scratch, *writable]
    out = {}
    for name, sub in VARIABLES.items():
        have = given.get(name, "")
        if have and os.path.isabs(have) and _under(os.path.normpath(have), ok):
            continue
        out[name] = os.path.join(base, sub) if sub else base
    return out
