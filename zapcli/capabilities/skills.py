"""Skills (docs/explanation/rules.md#undeclared-means-unreachable): allowlisted SKILL.md folders found in layers (use_skill: captools).
Imports yaml (frontmatter, lazily), zapcli.paths, zapcli.boundedread, zapcli.trust.

Search order, first found wins: workspace `.zapcli/skills`, `.claude/skills`,
`.agents/skills`; system `<config>/skills`; the user's `~/.claude/skills`,
`~/.agents/skills`; then plugins (entry points `zapcli.skills`, each a folder).
A skill is `<root>/<name>/SKILL.md` with frontmatter `name` and `description`.
The workspace's own folders count only once the person trusted them
(`zapcli.trust`), at spawn and again when `use_skill` reads the file.
"""

from __future__ import annotations

from pathlib import Path

from zapcli import trust
from zapcli.boundedread import read_at_most
from zapcli.paths import config_dir
from zapcli.plain import frozen

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

MAX_SKILLS = 16
MAX_SKILL_BYTES = 64 * 1024
PLUGIN_GROUP = "zapcli.skills"


@frozen
class Skill:
    """A granted skill: `path` is the absolute SKILL.md; `root` the layer it came from."""

    name: str
    description: str
    path: str
    root: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description, "path": self.path,
                "root": self.root}


def skill_roots(workspace: Path) -> list[Path]:
    """The folders searched, in order (existing or not)."""
    home = Path.home()
    roots = [*(workspace / root for root in trust.SKILLS), config_dir() / "skills",
             home / ".claude" / "skills", home / ".agents" / "skills"]
    return roots + _plugin_roots()


def _plugin_roots() -> list[Path]:
    from importlib.metadata import entry_points

    roots = []
    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
            roots.append(Path(obj() if callable(obj) else obj))
        except Exception:  # noqa: BLE001 - a broken plugin only loses its skills
            continue
    return roots


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body). Raises ValueError when the frontmatter is missing or bad."""
    import yaml

    if not text.startswith("---"):
        raise ValueError("SKILL.md has no frontmatter (a `---` block with name and description)")
    end = text.find("\n---", 3)
    if end < 0:
        raise ValueError("SKILL.md frontmatter is not closed with `---`")
    try:
        meta = yaml.safe_load(text[3:end])
    except yaml.YAMLError as exc:
        raise ValueError(f"SKILL.md frontmatter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise ValueError("SKILL.md frontmatter must be a mapping with name and description")
    body = text[end + 4:]
    return meta, body[body.find("\n") + 1:] if "\n" in body else ""


def _read_skill(folder: Path, root: Path, raw: bytes | None = None) -> Skill:
    """The skill in `folder` (`raw`: its SKILL.md's bytes, read already)."""
    path = folder / "SKILL.md"
    raw = read_at_most(path, MAX_SKILL_BYTES) if raw is None else raw
    text = raw[:MAX_SKILL_BYTES].decode("utf-8", "replace")
    meta, _ = split_frontmatter(text)
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ValueError(f"{path}: frontmatter has no `description`")
    name = meta.get("name")
    return Skill(str(name) if isinstance(name, str) and name else folder.name,
                 " ".join(description.split()), str(path), str(root))


def find_skills(names: tuple[str, ...], workspace: Path
                ) -> tuple[list[Skill], list[dict[str, str]]]:
    """Resolve declared skill names: (granted skills in declared order, diagnostics).

    A name is looked up as `<root>/<name>/SKILL.md` in each root in order; a
    broken SKILL.md is a diagnostic and the search goes on to later roots.
    """
    found: list[Skill] = []
    diags: list[dict[str, str]] = []
    roots = skill_roots(workspace)
    own = trust.skill_roots(workspace)  # the workspace's own: used once trusted
    for name in names:
        if len(found) >= MAX_SKILLS:
            diags.append({"dimension": "skills", "name": name,
                          "message": f"not granted: at most {MAX_SKILLS} skills"})
            continue
        problems = []
        skill = None
        for root in roots:
            folder = root / name
            if not (folder / "SKILL.md").exists():  # a FIFO or device: a diagnostic
                continue
            raw = None
            if root in own:  # the workspace's own: the bytes its trust covers, or nothing
                verdict, unit = trust.verdict(workspace), f"{own[root]}/{name}"
                raw = verdict.read(unit)
                if raw is None:
                    problems.append(f"{folder}: {verdict.why(unit)}, so it is not used "
                                    f"(zapcli trust {workspace} to use it)")
                    continue
            try:
                skill = _read_skill(folder, root, raw)
                break
            except (OSError, ValueError) as exc:
                problems.append(str(exc))
        if skill is not None:
            found.append(skill)
            continue
        message = "; ".join(problems) if problems else (
            f"skill '{name}' not found: looked for {name}/SKILL.md in "
            + ", ".join(_show(r, workspace) for r in roots))
        diags.append({"dimension": "skills", "name": name, "message": message})
    return found, diags


def _show(path: Path, workspace: Path) -> str:
    """A path as the prompt shows it: workspace-relative, `~/...`, or absolute."""
    for base, label in ((workspace.resolve(), ""), (Path.home().resolve(), "~/")):
        try:
            return label + str(Path(path).resolve().relative_to(base))
        except ValueError:
            continue
    return str(path)


def prompt_lines(skills: list[Skill] | tuple[Skill, ...], workspace: Path) -> list[str]:
    """One line per skill: name, description, location."""
    return [f"- {s.name}: {s.description} ({_show(Path(s.path), workspace)})" for s in skills]


