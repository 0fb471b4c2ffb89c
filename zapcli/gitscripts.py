"""What a script a git setting runs reads as code besides itself (`reads`):
a Python script's imports, a shell script's sourced files and the
programs it runs, a node script's requires — read on from each file found,
at most `MOST` files. `zapcli.gitruns.found` asks, for the scripts a
setting's words name; `zapcli.control` holds what it says read-only.
Imports only the standard library, `zapcli.gitruns` and `zapcli.lazy`
(kernel modules; its patterns are compiled at their first use: most runs
read no script); it reads files, never runs them.

A name is looked up in a folder by listing it: Python finds `watch` as
`watch.py`, a `watch/` package, `watch.pyc`, an extension module, or
cached bytecode in `__pycache__`, in the script's folder before the
standard library (`import csv` runs a `csv.py` made beside it); node finds
`./lib` as `lib`, `lib.js`, `lib.json`, `lib/index.js`, and `lodash` in
each `node_modules` from the script's folder up. So the folder a script
looks names up in is held whole where it lies below the top. At the top,
which cannot be held whole (`zapcli.sandbox.policy`), Python's names are
held in every spelling; what cannot be (a node script's `./lib` there, an
import computed at the top) is `listed`, and the sandbox refuses to let
commands write there. A script whose imports its words compute
(`importlib.import_module(name)`, `sys.path` changed, `require(name)`,
`. "$DIR/x.sh"` with `DIR` not known here) has its folder held whole, and
the sandbox's notes say so.
"""

from __future__ import annotations

import os
import re
import sys

from zapcli.lazy import Pattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from zapcli.gitruns import Found

MOST = 64  # files read, all scripts of a setting together
_LIMIT = 1 << 20  # a longer file is not read: its folder is held whole

_SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "ash", "mksh")
# imported at every CPython start before the script's folder is on the path: a
# file of that name there is never looked up
_PY_STARTED = {"os", "io", "abc", "codecs", "stat", "posixpath", "genericpath", "encodings",
               "_collections_abc", "site", "_sitebuiltins"}
# Python's calls that import what their arguments compute
_PY_COMPUTED = {"import_module", "__import__", "run_path", "run_module", "spec_from_file_location",
                "load_source", "SourceFileLoader", "addsitedir", "exec", "execfile", "load_module"}
# a call that loads a module (`require(`, `import(`): its argument a literal or computed
_JS_CALL = Pattern(r"""\b(?:require|import)\s*\(\s*(?:(['"])([^'"`$]*)\1\s*\))?""")
_JS_STATIC = Pattern(r"""\b(?:import|export)\s[^;'"`]*?\bfrom\s*(['"])([^'"]+)\1"""
                        r"""|\bimport\s*(['"])([^'"]+)\3""")
_JS_EXACT = (".js", ".cjs", ".mjs", ".json")
_JS_BUILTIN = {"assert", "buffer", "child_process", "cluster", "crypto", "dgram", "dns", "events",
               "fs", "fs/promises", "http", "https", "module", "net", "os", "path", "process",
               "querystring", "readline", "stream", "string_decoder", "timers", "tls", "tty",
               "url", "util", "v8", "vm", "worker_threads", "zlib", "perf_hooks", "async_hooks"}
# the shell's ways of naming the script's own folder (`$0`, `$BASH_SOURCE`)
_SELF = r'"?\$(?:\{)?(?:0|BASH_SOURCE(?:\[0\])?)(?:\})?"?'
_DIRNAME = Pattern(r"\$\(\s*dirname\s+(?:--\s+)?" + _SELF + r"\s*\)|\$\{(?:0|BASH_SOURCE(?:\[0\])?)%/\*\}")
_REAL = Pattern(r"\$\(\s*(?:readlink\s+-[fe]|realpath)\s+(?:--\s+)?" + _SELF + r"\s*\)")
_DIRNAME_OF = Pattern(r'\$\(\s*dirname\s+(?:--\s+)?"?(/[^"$()]*)"?\s*\)')
_CD_PWD = Pattern(r'\$\(\s*cd\s+(?:--\s+)?"?(/[^"$()]*)"?\s*(?:&&|;)\s*pwd(?:\s+-P)?\s*\)')
_ASSIGN = Pattern(r'^\s*(?:export\s+|readonly\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=("?)(/[^"$`;&|\s]*)\2\s*$')
_SOURCE = Pattern(r"^\s*(?:\.|source)\s+(\S+)")


def _ext() -> tuple[str, ...]:
    import importlib.machinery

    return tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _spellings() -> tuple[str, ...]:
    """What Python looks for in a folder for a name, but a package folder."""
    return tuple(dict.fromkeys((".py", ".pyc", ".so", ".abi3.so", *_ext())))


def hint(words: Iterable[tuple[str, bool]]) -> str:
    """The language of the interpreter a command runs first (`python3`,
    `sh`, `node`): a script without a suffix or a `#!` line is read in it."""
    for word, program in words:
        name = os.path.basename(word) if program else ""
        if re.fullmatch(r"(?:python|pypy)[0-9.]*", name):
            return "py"
        if name in _SHELLS:
            return "sh"
        if name in ("node", "nodejs"):
            return "js"
    return ""


def _language(path: str, text: str, given: str) -> str:
    ext = os.path.splitext(path)[1]
    by_ext = {".py": "py", ".pyw": "py", ".sh": "sh", ".bash": "sh", ".zsh": "sh", ".ksh": "sh",
              ".js": "js", ".cjs": "js", ".mjs": "js"}
    if ext in by_ext:
        return by_ext[ext]
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        if "python" in first:
            return "py"
        if "node" in first:
            return "js"
        return "sh" if re.search(rf"\b(?:{'|'.join(_SHELLS)})\b", first) else ""
    return given


def _read(path: str) -> str | None:
    """A regular file's text ("" for anything else: a FIFO put in a
    script's place never blocks the sandbox's start), None past `_LIMIT`."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        data = os.read(fd, _LIMIT + 1)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return None if len(data) > _LIMIT else data.decode("utf-8", errors="replace")


def reads(paths: Iterable[str], top: str, *, hint: str = "", modules: Iterable[str] = ()) -> Found:
    """What the scripts among `paths` (files a setting runs; read in the
    language of their suffix or `#!` line, else `hint`'s) and `modules` (a
    `python -m` module's files: the top first on the path) read as code,
    and what those read, to `MOST` files."""
    from zapcli.gitruns import Found

    out = Found()
    queue = [(m, "py", top) for m in _held_modules(modules, top, out)]  # before as a script
    queue += [(p, hint, os.path.dirname(p)) for p in paths if os.path.isfile(p)]
    seen: set[str] = set()
    while queue:
        path, given, first = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        text = _read(path)
        language = _language(path, text or "", given)
        if not language:
            continue
        if text is None or len(seen) > MOST:
            _whole(os.path.dirname(path), top, out, f"{_shown(path, top)} is not read "
                   f"({'longer than 1 MiB' if text is None else f'more than {MOST} scripts'})")
            continue
        reader = {"py": _python, "sh": _shell, "js": _node}[language]
        queue += reader(path, text, first, top, out)
    return out


def _held_modules(files: Iterable[str], top: str, out: Found) -> list[str]:
    """`python -m` modules' files (the top first on the path), held with
    the folder Python looked their last name up in: whole below the top
    (`tools.check`: a `tools/check/` package made there would win), each
    spelling at the top."""
    files = list(files)
    for path in files:
        folder = os.path.dirname(path)
        if os.path.basename(path) in ("__init__.py", "__main__.py"):
            folder = os.path.dirname(folder)
        out.paths += [] if path in out.paths else [path]
        if os.path.normpath(folder) == os.path.normpath(top):
            name = os.path.splitext(os.path.relpath(path, top).split(os.sep)[0])[0]
            _lookup([name], top, top, out)
        else:
            _whole(folder, top, out)
    return files


def _shown(path: str, top: str) -> str:
    rel = os.path.relpath(path, top)
    return path if rel.startswith("..") else rel


def _whole(folder: str, top: str, out: Found, why: str = "") -> None:
    """`folder` held whole where it lies below the top (and said, with `why`);
    `listed` where it is the top (or outside: not this root's to hold)."""
    rel = os.path.relpath(folder, top)
    if rel != "." and not rel.startswith(".."):
        out.paths += [] if folder in out.paths else [folder]
        note = f"{why}: {rel}/ is kept read-only whole"
        out.said += [note] if why and note not in out.said else []
    elif rel == "." and why and (f"{why}, found in", folder, "") not in out.listed:
        out.listed.append((f"{why}, found in", folder, ""))  # any depth: a package's module


def _python(path: str, text: str, first: str, top: str, out: Found) -> list[tuple[str, str, str]]:
    """What a Python file imports: each name looked up in `first` (the
    script's folder, or the top for `-m`), a relative import in its package."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []  # python would not run it either
    more: list[tuple[str, str, str]] = []
    roots, computed = [first], False
    for node in ast.walk(tree):  # `sys.path.insert(0, "tools")`: looked up there too
        added = _path_added(node, path, top)
        computed = computed or added is None
        roots += [a for a in added or () if a not in roots]
    if computed:
        _whole(os.path.dirname(path), top, out, f"{_shown(path, top)} imports what its code computes")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                for root in roots:
                    more += _lookup(alias.name.split("."), root, top, out, first)
        elif isinstance(node, ast.ImportFrom) and node.level:
            package = os.path.dirname(path)
            for _ in range(node.level - 1):
                package = os.path.dirname(package)
            _whole(package, top, out)
            for alias in node.names:
                name = [*(node.module or "").split("."), alias.name]
                more += _lookup([n for n in name if n], package, top, out, first)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                for root in roots:
                    more += _lookup([*node.module.split("."), alias.name], root, top, out, first)
        elif _computes(node):
            _whole(os.path.dirname(path), top, out,
                   f"{_shown(path, top)} imports what its code computes")
    return more


def _computes(node: object) -> bool:
    """A call that imports what its arguments compute, or `sys.path` changed."""
    import ast

    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _PY_COMPUTED
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(_is_sys_path(t) or isinstance(t, ast.Subscript) and _is_sys_path(t.value)
                   for t in targets)
    return False


def _path_added(node: object, script: str, top: str) -> list[str] | None:
    """The folders a `sys.path.insert(i, x)`, `.append(x)` or `.extend([...])`
    adds, where each is known here (a string, `__file__`, `os.path.join`,
    `dirname`, `Path(...).parent / "x"`: `_static`); None for another change
    of `sys.path` (not known here); [] where `node` is none."""
    import ast

    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and _is_sys_path(node.func.value):
        args = node.args[1:] if node.func.attr == "insert" else node.args
        if node.func.attr == "extend" and args and isinstance(args[0], (ast.List, ast.Tuple)):
            args = args[0].elts
        if node.func.attr not in ("insert", "append", "extend"):
            return None
        found = [_static(a, script, top) for a in args]
        return None if not found or None in found else [
            os.path.normpath(os.path.join(top, str(f))) for f in found]
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(_is_sys_path(t) or isinstance(t, ast.Subscript) and _is_sys_path(t.value)
               for t in targets):
            return None
    return []


def _static(node: object, script: str, top: str) -> str | None:
    """The path an expression names, where it is known without running it
    (a relative one is taken from the top by the caller: git runs it there)."""
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id == "__file__":
        return script
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _static(node.value, script, top)
        return os.path.dirname(inner) if inner else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _static(node.left, script, top), _static(node.right, script, top)
        return os.path.join(left, right) if left and right else None
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    args = [_static(a, script, top) for a in node.args]
    if None in args or name not in _PATH_CALLS or (not args and name != "resolve"):
        return None
    if name == "resolve":
        return _static(func.value, script, top) if isinstance(func, ast.Attribute) else None
    if name == "join":
        return os.path.join(*[a for a in args if a is not None])
    return os.path.dirname(str(args[0])) if name == "dirname" else str(args[0])


# calls whose value `_static` knows: dirname, join; the rest give their argument
_PATH_CALLS = {"dirname", "join", "abspath", "realpath", "normpath", "Path", "PurePath", "str",
               "fspath", "resolve", "expanduser"}


def _is_sys_path(node: object) -> bool:
    import ast

    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def _lookup(parts: list[str], folder: str, top: str, out: Found,
            first: str = "") -> list[tuple[str, str, str]]:
    """Hold what Python finds `parts` (`a.b.c`) as, looked up in `folder`:
    the folder whole below the top, each spelling of the name at the top
    (a name it does not find there is found later on its path: a file made
    there first would run instead); each package on the way whole. The
    files found, to read on."""
    if not parts or parts[0] in sys.builtin_module_names or parts[0] in _PY_STARTED:
        return []
    first = first or folder
    _whole(folder, top, out)
    if os.path.normpath(folder) == os.path.normpath(top):
        base = os.path.join(folder, parts[0])
        out.paths += [p for p in (base, *(base + s for s in _spellings()),
                                  os.path.join(folder, "__pycache__")) if p not in out.paths]
    found: list[tuple[str, str, str]] = []
    for part in parts:
        base = os.path.join(folder, part)
        if os.path.isdir(base):
            _whole(base, top, out)  # a package: its names are looked up in it
            init = os.path.join(base, "__init__.py")
            found += [(init, "py", first)] if os.path.isfile(init) else []
            folder = base
            continue
        found += [(base + ".py", "py", first)] if os.path.isfile(base + ".py") else []
        break
    return found


def _shell(path: str, text: str, first: str, top: str, out: Found) -> list[tuple[str, str, str]]:
    """What a shell script runs and sources, read as the setting's words
    are (`zapcli.gitruns.command`: from the top, where git runs it), its
    own folder put in for `$(dirname "$0")`, `${0%/*}` and a variable
    set to such a folder; a sourced file a variable not known here names
    holds the script's folder whole."""
    from zapcli.gitruns import command, modules

    folder = os.path.dirname(path)
    known: dict[str, str] = {}
    more: list[tuple[str, str, str]] = []
    for line in text.replace("\\\n", " ").splitlines():
        line = _REAL.sub(path, line)
        line = _DIRNAME.sub(folder, line)
        line = _DIRNAME_OF.sub(lambda m: os.path.dirname(m.group(1)), line)
        line = _CD_PWD.sub(lambda m: m.group(1), line)
        for name, value in known.items():
            line = re.sub(rf"\$(?:\{{{name}\}}|{name}\b)", value.replace("\\", r"\\"), line)
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assigned = _ASSIGN.match(line)
        if assigned:
            known[assigned.group(1)] = assigned.group(3)
        sourced = _SOURCE.match(line)
        if sourced and "$" in sourced.group(1):
            _whole(folder, top, out, f"{_shown(path, top)} sources a file its words compute")
        found = command(line, top, runs_only=True)
        out.add(found)
        more += [(m, "py", top) for m in _held_modules(modules(line, top), top, out)]
        more += [(p, "", os.path.dirname(p)) for p in found.paths if os.path.isfile(p)]
    return more


def _node(path: str, text: str, first: str, top: str, out: Found) -> list[tuple[str, str, str]]:
    """What a node script requires or imports: a relative one is looked up
    in its folder (held whole below the top; named exactly, at the top), a
    package in each `node_modules` from the script's folder up (held)."""
    folder = os.path.dirname(path)
    more: list[tuple[str, str, str]] = []
    specs = [(m.group(2) or m.group(4), m.start()) for m in _JS_STATIC.finditer(text)]
    for m in _JS_CALL.finditer(text):
        if m.group(1) is None and not text.startswith(")", m.end()):  # require(name), import(`./${x}`)
            _whole(folder, top, out, f"{_shown(path, top)} requires what its code computes")
        specs.append((m.group(2), m.start()))
    for spec, _ in sorted(specs, key=lambda s: s[1]):
        if not spec or spec.startswith("node:") or spec in _JS_BUILTIN:
            continue
        if spec.startswith(("./", "../")) or spec in (".", ".."):
            target = os.path.normpath(os.path.join(folder, spec))
            place = os.path.dirname(target)
            if os.path.isfile(target) and os.path.splitext(target)[1] in _JS_EXACT:
                out.paths.append(target)  # named in full: node takes that file
            else:
                _whole(place, top, out, f"{_shown(path, top)} requires {spec}")
            more += [(p, "js", "") for p in _js_files(target)]
            continue
        name = "/".join(spec.split("/")[:2 if spec.startswith("@") else 1])
        up = folder
        while os.path.normpath(up) != os.path.normpath(top) and up.startswith(top):
            _whole(os.path.join(up, "node_modules"), top, out)
            up = os.path.dirname(up)
        out.paths.append(os.path.join(top, "node_modules", name))
    return more


def _js_files(target: str) -> list[str]:
    """The file node takes `target` for (to read on), where it exists."""
    for p in (target, *(target + s for s in _JS_EXACT),
              os.path.join(target, "index.js")):
        if os.path.isfile(p):
            return [p]
    return []
