"""Settings (docs/explanation/rules.md#where-things-live): defaults < user config.yaml < workspace .zapcli/config.yaml
< environment (`ZAPCLI_<KEY>`) < flags. Imports `zapcli.paths`, `zapcli.errors`, `zapcli.boundedread` and `zapcli.configfile` (when a file is read),
`zapcli.trust` (when a workspace has a config file).

The workspace file has no effect until the person trusted it (`zapcli.trust`).

Config knows its own keys and nothing of backends or executors: every other
top-level key belongs to an owner the caller passes (`owners`: the seams'
registries, `zapcli.backends.sections.OWNERS`), which checks it — `backends`,
`executor`, an executor's section such as `ray` — and a key nobody owns is
unknown. A workspace file never sets an owned key (it would choose the
programs that run, or where the work and its keys go).

YAML is imported only when a config file exists and its text has not been
parsed before (`zapcli.configfile`), so the common path stays fast.
An invalid file raises ConfigError naming file, line and key for every
problem in it; nothing of it is applied (never half-applied). Commands that
only watch or stop subagents load leniently: an invalid layer is skipped and
its problems travel in `Settings.problems`, so a typo never blocks `kill`.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.errors import ConfigError
from zapcli.paths import config_dir
from zapcli.plain import field, fields, frozen

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

APPROVAL_MODES = ("confirm", "workspace", "auto-edit", "full")
SANDBOX_CHOICES = ("auto", "on", "off")
MAX_CONFIG_BYTES = 256 * 1024  # config.yaml is short; a bigger file is refused unread
WORKTREE_KEYS = ("setup", "teardown")


@frozen
class Settings:
    """Effective settings. Durations are seconds; counts are plain integers."""

    timeout_s: float = 300.0
    max_concurrent: int = 8  # running subagents per session; 0 = unlimited
    max_kept: int = 1000  # 0 = keep everything
    stall_s: float = 120.0  # 0 disables stall display
    kill_grace_s: float = 3.0
    model: str | None = None
    providers: dict[str, Any] = field(default_factory=dict)
    approval: str = "workspace"
    writable_roots: tuple[str, ...] = ()
    on_finish: str | None = None  # shell command run once when a subagent ends (docs/explanation/rules.md#parallel-coding)
    # event -> shell command run once per occurrence (`zapcli.trail.events`); your own config only
    hooks: dict[str, str] = field(default_factory=dict)
    worktree: dict[str, Any] = field(default_factory=dict)  # {setup, teardown}: commands run in a new tree / before its removal
    max_subagents: int = 32  # subagents one `zapcli run` starts in all; 0 = unlimited (docs/explanation/rules.md#budgets)
    prices: dict[str, Any] = field(default_factory=dict)  # model -> USD per million tokens
    scratch_size: int | None = None  # bytes a sandboxed scratch folder may hold (None: 1 GiB)
    # the sandbox of a shell a model chose (`spawn` with cli sh through `mcp serve` or
    # `zapcli call`): auto (where this machine can), on (refused where it cannot), off
    model_shell_sandbox: str = "auto"
    # folders whose own zapcli files are trusted as they are (for scripts and CI; `zapcli.trust`)
    trusted: tuple[str, ...] = ()
    # the keys other code owns (backends, executor, an executor's section), as
    # their owners checked them; `where` says where each came from
    sections: dict[str, Any] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # workspace settings that were not applied, and why
    problems: tuple[str, ...] = ()  # lenient loads only: invalid layers that were skipped


MAX_INT = 2**63 - 1  # what a record can hold (orjson: 64-bit integers)
MAX_KILL_GRACE_S = 3600  # kill_grace_s, ZAPCLI_KILL_GRACE_S and `kill --grace` alike
_NUMBER_KEYS = {"timeout_s": float, "stall_s": float, "kill_grace_s": float,
                "max_concurrent": int, "max_kept": int, "max_subagents": int}
KEYS = tuple(f.name for f in fields(Settings)
             if f.name not in ("sections", "where", "notes", "problems"))
ENV_KEYS = ("timeout_s", "max_concurrent", "max_kept", "stall_s", "kill_grace_s", "approval",
            "max_subagents", "scratch_size")


def _check_value(key: str, value: Any) -> Any:
    """Return the normalised value or raise ValueError saying what is expected."""
    if key in _NUMBER_KEYS:
        kind = _NUMBER_KEYS[key]
        if isinstance(value, str) and _looks_numeric(value):
            raise ValueError(f"expected a number, got the text {value!r} (YAML reads a number "
                             "like 1e9 as text: write it out, e.g. 1000000000)")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number, got {value!r}")
        if value != value or value in (float("inf"), float("-inf")):  # nan, inf
            raise ValueError(f"expected a finite number, got {value!r}")
        if kind is int and not float(value).is_integer():
            raise ValueError(f"expected a whole number, got {value!r}")
        if abs(value) > MAX_INT:
            raise ValueError(f"expected a number up to {MAX_INT}, got {value!r}")
        if key == "timeout_s" and value <= 0:
            raise ValueError(f"expected a number of seconds above 0, got {value!r}")
        if value < 0:
            raise ValueError(f"expected 0 or more, got {value!r}")
        if key == "kill_grace_s" and value > MAX_KILL_GRACE_S:
            raise ValueError(f"expected 0 to {MAX_KILL_GRACE_S} seconds (as kill --grace), "
                             f"got {value!r}")
        return kind(value)
    if key == "model":
        if value is not None and not isinstance(value, str):
            raise ValueError(f"expected a model name (text), got {value!r}")
        return value
    if key == "providers":
        return _check_providers(value)
    if key == "on_finish":
        if value is not None and not isinstance(value, str):
            raise ValueError(f"expected a shell command (text), got {value!r}")
        return value
    if key == "hooks":
        from zapcli.trail.events import check_hooks

        return check_hooks(value)
    if key == "approval":
        if value not in APPROVAL_MODES:
            raise ValueError(f"expected one of {', '.join(APPROVAL_MODES)}, got {value!r}")
        return value
    if key == "writable_roots":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("expected a list of folder paths")
        return tuple(value)
    if key == "worktree":
        return _check_worktree(value)
    if key == "model_shell_sandbox":
        if value is False:  # YAML reads a bare `off` as false
            return "off"
        if value is True:
            return "on"
        if value not in SANDBOX_CHOICES:
            raise ValueError(f"expected one of {', '.join(SANDBOX_CHOICES)}, got {value!r}")
        return value
    if key == "prices":
        from zapcli.prices import check_prices

        return check_prices(value)
    if key == "scratch_size":
        from zapcli.sizes import parse

        return None if value is None else parse(value)
    if key == "trusted":
        return _check_trusted(value)
    raise AssertionError(key)


def _check_trusted(value: Any) -> tuple[str, ...]:
    """`trusted:` a list of absolute folders (`~` allowed): their own zapcli
    files, and those of every workspace under them, are trusted as they are
    (not a repository inside another: `zapcli.trust.nested_in`)."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError("expected a list of folder paths, e.g. [~/src/work, /ci/checkout]")
    relative = [v for v in value if not os.path.isabs(os.path.expanduser(v))]
    if relative:
        raise ValueError(f"{relative[0]!r} is not an absolute path (a folder is trusted by its "
                         "full path, e.g. ~/src/project)")
    return tuple(value)


def _check_worktree(value: Any) -> dict[str, Any]:
    """`worktree: {setup, teardown}`: shell commands run in a subagent's new
    tree before its task, and in the tree before it is removed."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping with keys {', '.join(WORKTREE_KEYS)}")
    for key, item in value.items():
        if key not in WORKTREE_KEYS:
            raise ValueError(f"unknown key worktree.{key} (valid: {', '.join(WORKTREE_KEYS)})")
        if item is not None and not (isinstance(item, str) and item.strip()):
            raise ValueError(f"worktree.{key}: expected a shell command (text), got {item!r}")
    return {k: v for k, v in value.items() if v is not None}


PROVIDER_KEYS = ("base_url", "api_key_env")


def _check_providers(value: Any) -> dict[str, Any]:
    """`providers:` name → {base_url (required), api_key_env}: checked here, so
    a broken entry stops spawn and shows in doctor rather than failing each
    subagent that uses it."""
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of provider name to {base_url, api_key_env}")
    for name, entry in value.items():
        where = f"providers.{name}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected a mapping with base_url (and api_key_env), "
                             f"got {entry!r}")
        for key, item in entry.items():
            if key not in PROVIDER_KEYS:
                raise ValueError(f"unknown key {where}.{key} (valid: {', '.join(PROVIDER_KEYS)})")
            if not (isinstance(item, str) and item.strip()):
                raise ValueError(f"{where}.{key}: expected text, got {item!r}")
        if "base_url" not in entry:
            raise ValueError(f"{where}.base_url is missing: set it to the server's URL, "
                             "e.g. http://localhost:11434/v1")
    return value


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip().lower() not in ("nan", "inf", "-inf", "+inf", "infinity")


class Owners:
    """The keys other code owns, as config asks about them: whether it `owns`
    a key, `check` (the value, normalised; raises ValueError saying what is
    wrong), the keys known without looking further (`names`, for "did you
    mean"), and why a workspace file may not set one. The seams' owners are
    `zapcli.backends.sections.OWNERS`; this default owns nothing."""

    env_keys: tuple[str, ...] = ()  # owned keys also read from ZAPCLI_<KEY>

    def owns(self, key: str) -> bool:
        return False

    def check(self, key: str, value: Any) -> Any:
        raise KeyError(key)

    def names(self) -> tuple[str, ...]:
        return ()

    def not_from_workspace(self, key: str) -> str:
        return "set it in your own config.yaml"


NOBODY = Owners()
_OWNED = "\0owned:"  # prefix of an owned key inside a layer, before it is split off


def _unknown(key: str, owners: Owners) -> str:
    import difflib

    valid = [*KEYS, *owners.names()]
    near = difflib.get_close_matches(str(key), valid, n=1)
    return f" (did you mean '{near[0]}'?)" if near else f" (valid keys: {', '.join(valid)})"


def _load_file(path: Path, owners: Owners = NOBODY, *, workspace: bool = False,
               raw: bytes | None = None) -> dict[str, Any]:
    """Parse and validate one config file (`raw`: its bytes, read already); {}
    when it does not exist. Owned keys come back under `_OWNED + key` (unchecked
    from a workspace file: not applied), with `where` (`file:line`) for each."""
    from zapcli.boundedread import larger_than, read_at_most

    try:
        raw = read_at_most(path, MAX_CONFIG_BYTES) if raw is None else raw[:MAX_CONFIG_BYTES + 1]
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: the file is larger than {larger_than(MAX_CONFIG_BYTES)}; "
                          "a config file is a short YAML file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    from zapcli.configfile import TOO_DEEP, Failed, parse

    parsed = parse(path, text)
    out: dict[str, Any] = {"where": {}}
    problems: list[str] = []
    for key, line, value in parsed:
        own = key in KEYS
        if not own and (not isinstance(key, str) or not owners.owns(key)):
            problems.append(f"{path}:{line}: unknown key '{key}'{_unknown(key, owners)}")
            continue
        slot = key if own else _OWNED + key
        if slot in out:
            problems.append(f"{path}:{line}: key '{key}' is given twice")
            continue
        if value is TOO_DEEP:
            problems.append(f"{path}:{line}: key '{key}': nested too deeply")
            continue
        if isinstance(value, Failed):
            raise value.exc
        try:
            out[slot] = _check_value(key, value) if own else \
                value if workspace else owners.check(key, value)
        except ValueError as exc:
            problems.append(f"{path}:{line}: key '{key}': {exc}")
        out["where"][key] = f"{path}:{line}"
    if out.get("on_finish") and (out.get("hooks") or {}).get("finished"):
        problems.append(f"{out['where']['hooks']}: key 'hooks': `finished` is the on-finish command, "
                        "also set by `on_finish`; keep one of them")
    if problems:  # every problem at once, so one edit fixes them all
        raise ConfigError("\n".join(problems))
    return out


def _from_env(owners: Owners = NOBODY) -> dict[str, Any]:
    out: dict[str, Any] = {"where": {}}
    problems: list[str] = []
    for key in (*ENV_KEYS, *owners.env_keys):
        var = "ZAPCLI_" + key.upper()
        raw = os.environ.get(var)
        if raw is None or raw == "":
            continue
        value: Any = raw
        if key in _NUMBER_KEYS:
            try:
                value = int(raw) if raw.strip().lstrip("+-").isdigit() else float(raw)
            except ValueError:
                problems.append(f"{var}={raw!r}: expected a number")
                continue
        try:
            if key in KEYS:
                out[key] = _check_value(key, value)
            else:
                out[_OWNED + key] = owners.check(key, value)
            out["where"][key] = var
        except ValueError as exc:
            problems.append(f"{var}: {exc}")
    if problems:
        raise ConfigError("\n".join(problems))
    if os.environ.get("ZAPCLI_MODEL"):
        out["model"] = os.environ["ZAPCLI_MODEL"]
        out["where"]["model"] = "ZAPCLI_MODEL"
    return out


def load_settings(workspace: Path | None = None, *, lenient: bool = False,
                  owners: Owners = NOBODY) -> Settings:
    """Merge the layers into one Settings.

    Raises ConfigError for an invalid file or variable, listing every problem.
    With `lenient` an invalid layer is skipped whole and its message lands in
    `Settings.problems` instead: for commands that watch or stop subagents.
    `owners` checks the keys config does not own (see `Owners`).
    """
    merged: dict[str, Any] = {}
    where: dict[str, str] = {}
    notes: list[str] = []
    problems: list[str] = []
    layers = [lambda: _load_file(config_dir() / "config.yaml", owners)]
    if workspace is not None:
        layers.append(lambda: _workspace_layer(workspace, merged.get("approval", "workspace"),
                                               notes, owners))
    layers.append(lambda: _from_env(owners))
    for layer in layers:
        try:
            got = layer()
        except ConfigError as exc:
            if not lenient:
                raise
            problems.append(exc.message)
            continue
        where.update(got.pop("where", {}))
        merged.update(got)
    sections = {k[len(_OWNED):]: merged.pop(k) for k in list(merged) if k.startswith(_OWNED)}
    return Settings(**merged, sections=sections, where=where, notes=tuple(notes),
                    problems=tuple(problems))


def _workspace_layer(workspace: Path, approval: str, notes: list[str],
                     owners: Owners = NOBODY) -> dict[str, Any]:
    """The workspace file, minus what a cloned repository must not decide for
    its user: a looser approval mode than the user's, writable roots outside
    the workspace (they would let edits anywhere run unasked), an on-finish
    command, event hooks or a tree's setup and teardown (they would run
    whatever the repository says), model prices (a price of 0 would lift your --max-cost),
    and every owned key (the programs agent CLIs run as, the executor and its
    cluster: they would run its commands, or send tasks and forwarded keys
    elsewhere)."""
    path = workspace / ".zapcli" / "config.yaml"
    if not os.path.lexists(path):
        return {}
    from zapcli import trust  # only when there is a file to trust

    raw = trust.verdict(workspace).read(trust.CONFIG)  # the bytes whose hash was trusted
    if raw is None:  # not trusted: no effect at all (the command says so, once)
        return {}
    layer = _load_file(path, owners, workspace=True, raw=raw)
    if layer.pop("trusted", None) is not None:  # a folder never vouches for itself
        layer["where"].pop("trusted", None)
        notes.append(f"{path}: `trusted` was not applied (a folder cannot trust itself); "
                     "list folders in your own config.yaml")
    wanted = layer.get("approval")
    if wanted and APPROVAL_MODES.index(wanted) > APPROVAL_MODES.index(approval):
        del layer["approval"]
        notes.append(f"{path}: `approval: {wanted}` is looser than your `{approval}` and was not "
                     "applied; set it in your own config.yaml or pass --approval")
    for slot in [k for k in layer if k.startswith(_OWNED)]:
        del layer[slot]
        key = slot[len(_OWNED):]
        layer["where"].pop(key, None)
        notes.append(f"{path}: `{key}` was not applied: {owners.not_from_workspace(key)}")
    if layer.get("on_finish"):  # a cloned repository must not make zapcli run its commands
        del layer["on_finish"]
        notes.append(f"{path}: `on_finish` runs a command and is not taken from a workspace "
                     "file; set it in your own config.yaml or pass --on-finish")
    if "hooks" in layer:  # a cloned repository must not make zapcli run its commands
        del layer["hooks"]
        layer["where"].pop("hooks", None)
        notes.append(f"{path}: `hooks` runs commands and is not taken from a workspace file; "
                     "set them in your own config.yaml or pass spawn --on-event")
    if "worktree" in layer:  # its setup and teardown would run commands the user did not choose
        del layer["worktree"]
        layer["where"].pop("worktree", None)
        notes.append(f"{path}: `worktree` (setup, teardown) runs commands and is not taken from "
                     "a workspace file; set it in your own config.yaml")
    if "model_shell_sandbox" in layer:  # a repository must not take its own shells out of it
        del layer["model_shell_sandbox"]
        layer["where"].pop("model_shell_sandbox", None)
        notes.append(f"{path}: `model_shell_sandbox` was not applied (whether a model's shell "
                     "runs in the sandbox is yours to say); set it in your own config.yaml")
    if "prices" in layer:  # a repository pricing its models at 0 would lift your --max-cost
        del layer["prices"]
        layer["where"].pop("prices", None)
        notes.append(f"{path}: `prices` was not applied (what a model costs is not a "
                     "repository's to say); set it in your own config.yaml")
    if "writable_roots" in layer:
        inside = []
        for root in layer["writable_roots"]:
            resolved = (workspace / root).resolve()
            if resolved == workspace.resolve() or workspace.resolve() in resolved.parents:
                inside.append(root)
            else:
                notes.append(f"{path}: writable root {root!r} is outside the workspace and was not "
                             "applied; list it in your own config.yaml")
        layer["writable_roots"] = tuple(inside)
    return layer
