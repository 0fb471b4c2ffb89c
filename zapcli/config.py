"""Settings (SPEC §2): defaults < user config.yaml < workspace .zapcli/config.yaml
< environment (`ZAPCLI_<KEY>`) < flags. Imports `zapcli.paths`, `zapcli.errors`, `zapcli.boundedread` (when a file is read).

YAML is imported only when a config file exists, so the common path stays fast.
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
MAX_CONFIG_BYTES = 256 * 1024  # config.yaml is short; a bigger file is refused unread
EXECUTORS = ("local", "ray")  # zapcli.executors.NAMES (config imports no executor)
RAY_KEYS = ("address", "resources", "python", "env", "max_concurrent", "pool_idle_s")


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
    backends: dict[str, Any] = field(default_factory=dict)  # name -> {command: [argv], format}
    on_finish: str | None = None  # shell command run once when a subagent ends (SPEC §16)
    executor: str = "local"  # where runners run (SPEC §15)
    ray: dict[str, Any] = field(default_factory=dict)  # the Ray executor's section (RAY_KEYS)
    notes: tuple[str, ...] = ()  # workspace settings that were not applied, and why
    problems: tuple[str, ...] = ()  # lenient loads only: invalid layers that were skipped


MAX_INT = 2**63 - 1  # what a record can hold (orjson: 64-bit integers)
_NUMBER_KEYS = {"timeout_s": float, "stall_s": float, "kill_grace_s": float,
                "max_concurrent": int, "max_kept": int}
KEYS = tuple(f.name for f in fields(Settings) if f.name not in ("notes", "problems"))


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
    if key == "approval":
        if value not in APPROVAL_MODES:
            raise ValueError(f"expected one of {', '.join(APPROVAL_MODES)}, got {value!r}")
        return value
    if key == "writable_roots":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("expected a list of folder paths")
        return tuple(value)
    if key == "backends":
        from zapcli.backends.clis.registry import check_backends

        return check_backends(value)
    if key == "executor":
        if value not in EXECUTORS:
            raise ValueError(f"expected one of {', '.join(EXECUTORS)}, got {value!r}")
        return value
    if key == "ray":
        return _check_ray(value)
    raise AssertionError(key)


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


def _check_ray(value: Any) -> dict[str, Any]:
    """The `ray:` section: address (the dashboard's), resources (Ray's
    entrypoint resources), python (the interpreter on the nodes), env (names
    of variables forwarded to the runner), max_concurrent (a cap of its own),
    pool_idle_s (how long the caller's pool on the cluster stays when idle)."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping with keys {', '.join(RAY_KEYS)}")
    for key, item in value.items():
        if key not in RAY_KEYS:
            raise ValueError(f"unknown key ray.{key} (valid: {', '.join(RAY_KEYS)})")
        if key in ("address", "python") and not (isinstance(item, str) and item.strip()):
            raise ValueError(f"ray.{key}: expected text, got {item!r}")
        if key == "resources" and not (isinstance(item, dict) and all(
                isinstance(n, str) and isinstance(a, (int, float)) and not isinstance(a, bool)
                and a >= 0 for n, a in item.items())):
            raise ValueError("ray.resources: expected a mapping of resource name to amount, "
                             "e.g. {CPU: 1, my_node_type: 1}")
        if key == "env" and not (isinstance(item, list) and all(isinstance(n, str) for n in item)):
            raise ValueError("ray.env: expected a list of environment variable names")
        if key == "max_concurrent" and (isinstance(item, bool) or not isinstance(item, int) or item < 0):
            raise ValueError(f"ray.max_concurrent: expected a whole number, 0 or more, got {item!r}")
        if key == "pool_idle_s" and (isinstance(item, bool) or not isinstance(item, (int, float))
                                     or not 0 < item < float("inf")):
            raise ValueError(f"ray.pool_idle_s: expected a number of seconds above 0, got {item!r}")
    return dict(value)


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip().lower() not in ("nan", "inf", "-inf", "+inf", "infinity")


def _load_file(path: Path) -> dict[str, Any]:
    """Parse and validate one config file; {} when it does not exist."""
    from zapcli.boundedread import larger_than, read_at_most

    try:
        raw = read_at_most(path, MAX_CONFIG_BYTES)
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
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a config file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if node is None:
        return {}
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{path}:{node.start_mark.line + 1}: the config must be a mapping of keys")
    out: dict[str, Any] = {}
    problems: list[str] = []
    for key_node, value_node in node.value:
        key = key_node.value
        line = key_node.start_mark.line + 1
        if key not in KEYS:
            import difflib

            near = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else f" (valid keys: {', '.join(KEYS)})"
            problems.append(f"{path}:{line}: unknown key '{key}'{hint}")
            continue
        if key in out:
            problems.append(f"{path}:{line}: key '{key}' is given twice")
            continue
        try:
            value = yaml.SafeLoader(yaml.serialize(value_node)).get_single_data()
        except RecursionError:
            problems.append(f"{path}:{line}: key '{key}': nested too deeply")
            continue
        try:
            out[key] = _check_value(key, value)
        except ValueError as exc:
            problems.append(f"{path}:{line}: key '{key}': {exc}")
    if problems:  # every problem at once, so one edit fixes them all
        raise ConfigError("\n".join(problems))
    return out


def _from_env() -> dict[str, Any]:
    out: dict[str, Any] = {}
    problems: list[str] = []
    for key in ("timeout_s", "max_concurrent", "max_kept", "stall_s", "kill_grace_s", "approval",
                "executor"):
        raw = os.environ.get("ZAPCLI_" + key.upper())
        if raw is None or raw == "":
            continue
        value: Any = raw
        if key in _NUMBER_KEYS:
            try:
                value = int(raw) if raw.strip().lstrip("+-").isdigit() else float(raw)
            except ValueError:
                problems.append(f"ZAPCLI_{key.upper()}={raw!r}: expected a number")
                continue
        try:
            out[key] = _check_value(key, value)
        except ValueError as exc:
            problems.append(f"ZAPCLI_{key.upper()}: {exc}")
    if problems:
        raise ConfigError("\n".join(problems))
    if os.environ.get("ZAPCLI_MODEL"):
        out["model"] = os.environ["ZAPCLI_MODEL"]
    return out


def load_settings(workspace: Path | None = None, *, lenient: bool = False) -> Settings:
    """Merge the layers into one Settings.

    Raises ConfigError for an invalid file or variable, listing every problem.
    With `lenient` an invalid layer is skipped whole and its message lands in
    `Settings.problems` instead: for commands that watch or stop subagents.
    """
    merged: dict[str, Any] = {}
    notes: list[str] = []
    problems: list[str] = []
    layers = [lambda: _load_file(config_dir() / "config.yaml")]
    if workspace is not None:
        layers.append(lambda: _workspace_layer(workspace, merged.get("approval", "workspace"), notes))
    layers.append(_from_env)
    for layer in layers:
        try:
            merged.update(layer())
        except ConfigError as exc:
            if not lenient:
                raise
            problems.append(exc.message)
    return Settings(**merged, notes=tuple(notes), problems=tuple(problems))


def _workspace_layer(workspace: Path, approval: str, notes: list[str]) -> dict[str, Any]:
    """The workspace file, minus what a cloned repository must not decide for
    its user: a looser approval mode than the user's, writable roots outside
    the workspace (they would let edits anywhere run unasked), an on-finish
    command (it would run whatever the repository says), the executor and
    its cluster (they would send tasks and forwarded keys elsewhere)."""
    path = workspace / ".zapcli" / "config.yaml"
    layer = _load_file(path)
    wanted = layer.get("approval")
    if wanted and APPROVAL_MODES.index(wanted) > APPROVAL_MODES.index(approval):
        del layer["approval"]
        notes.append(f"{path}: `approval: {wanted}` is looser than your `{approval}` and was not "
                     "applied; set it in your own config.yaml or pass --approval")
    if "backends" in layer:  # a command a cloned repository names would run as its user
        del layer["backends"]
        notes.append(f"{path}: `backends` was not applied: the commands an agent CLI runs as "
                     "are set in your own config.yaml")
    if layer.get("on_finish"):  # a cloned repository must not make zapcli run its commands
        del layer["on_finish"]
        notes.append(f"{path}: `on_finish` runs a command and is not taken from a workspace "
                     "file; set it in your own config.yaml or pass --on-finish")
    for key in ("executor", "ray"):  # where tasks (and ray.env's secrets) are sent is the user's call
        if key in layer:
            del layer[key]
            notes.append(f"{path}: `{key}` was not applied (a workspace cannot choose where your "
                         "subagents run); set it in your own config.yaml or pass --executor")
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
