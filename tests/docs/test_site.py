"""The documentation site (#31 item 1): it builds with `mkdocs build
--strict`; every internal link and anchor of the built pages resolves; the
generated command reference says what `--help` says, command by command and
option by option; every config key has its entry; the timeline picture was
made by the build, in a real browser."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs.conftest import ROOT, Site
from zapcli.cli import gen

pytestmark = pytest.mark.xdist_group("docs")  # one build, shared


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if value and ((tag == "a" and name == "href") or (tag in ("img", "script") and name == "src")
                          or (tag == "link" and name == "href")):
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_it_builds_strictly(site: Site) -> None:
    print(f"mkdocs build --strict: {site.seconds:.1f}s")
    assert (site.folder / "index.html").is_file()
    assert (site.folder / "reference" / "commands" / "index.html").is_file()


def test_every_internal_link_and_anchor_resolves(site: Site) -> None:
    import yaml

    base = urlsplit(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["site_url"]).path
    pages = {p: _parse(p) for p in site.folder.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        for link in page.links:
            url = urlsplit(link)
            if url.scheme or url.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            if url.path.startswith("/"):  # 404.html links from the site's root (site_url)
                assert url.path.startswith(base), (path, link)
                target = (site.folder / unquote(url.path[len(base):])).resolve()
            else:
                target = path if not url.path else (path.parent / unquote(url.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(site.folder)}: {link} (no such file)")
                continue
            if url.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(url.fragment) not in ids:
                    broken.append(f"{path.relative_to(site.folder)}: {link} (no such anchor)")
    assert not broken, "\n".join(broken)


def _sections(text: str) -> dict[str, str]:
    """{command: its part of commands.md}."""
    heads = list(re.finditer(r"^#{2,3} zapcli (.+?) \{ #[\w-]+ \}$", text, re.M))
    return {m.group(1): text[m.end():(heads[i + 1].start() if i + 1 < len(heads) else len(text))]
            for i, m in enumerate(heads)}


def _plain(text: str) -> str:
    """Text with Markdown's escapes and emphasis taken out, spaces collapsed."""
    text = text.replace("\\", "").replace("**", "").replace("`", "").replace("&lt;", "<").replace("&gt;", ">")
    return " ".join(text.split())


def _help(name: str) -> str:
    from typer.testing import CliRunner

    from zapcli.cli.app import app

    res = CliRunner().invoke(app, [*name.split(), "--help"], prog_name="zapcli",
                             env={"COLUMNS": "2000", "TERMINAL_WIDTH": "2000", "NO_COLOR": "1"})
    assert res.exit_code == 0, (name, res.output)
    return res.output


def _help_options(text: str) -> dict[str, str]:
    """{option names: help text} from the Options panel of rich's help."""
    out = {}
    panel = text.split("─ Options ", 1)[1] if "─ Options " in text else ""
    for line in panel.split("\n"):
        m = re.match(r"^│\s+((?:-[-\w]+\s+)+)(?:[A-Z][A-Z_=]*\s+)?(.*?)\s*│$", line)
        if m:
            out[" ".join(sorted(m.group(1).split()))] = " ".join(m.group(2).split())
    return out


def test_the_command_reference_says_what_help_says() -> None:
    """For every command and group command: the reference has a section;
    its usage line, options and their help are those of `zapcli … --help`."""
    reference = (ROOT / "docs" / "reference" / "commands.md").read_text(encoding="utf-8")
    sections = _sections(reference)
    names = [*gen.commands(), *(f"{g} {s}" for g, subs in gen.groups().items() for s in subs)]
    assert set(sections) == set(names) | set(gen.groups()), set(sections) ^ set(names)
    wrong = []
    for name in names:
        shown, section = _help(name), sections[name]
        usage = re.search(r"Usage: (zapcli [^\n│]*)", shown).group(1).strip().replace("{", "").replace("}", "")
        if f"```text\n{' '.join(usage.split())}\n```" not in section:
            wrong.append(f"{name}: usage {usage!r}")
        rows = [r for r in section.split("\n") if r.startswith("| `-")]
        documented = {" ".join(sorted(re.findall(r"`(-[-\w]+)", r.split(" | ")[0]))): _plain(r)
                      for r in rows}
        helped = _help_options(shown)
        if set(documented) != set(helped):
            wrong.append(f"{name}: options {sorted(set(documented) ^ set(helped))}")
            continue
        for opts, text in helped.items():
            if text and _plain(text) not in documented[opts]:
                wrong.append(f"{name} {opts}: --help says {text!r}")
        first = _plain(gen.argspec(with_groups=True)[name]["help"].split("\n\n")[0])
        if first and first not in _plain(section):
            wrong.append(f"{name}: its description")
    assert not wrong, "\n".join(wrong)


def test_every_config_key_has_its_entry() -> None:
    from zapcli.config import KEYS
    from zapcli.executors.ray import RAY_KEYS

    page = (ROOT / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    missing = [k for k in (*KEYS, "backends", "executor", "ray") if f"### `{k}`" not in page]
    missing += [f"ray.{k}" for k in RAY_KEYS if f"| `{k}` |" not in page]
    assert not missing, missing


def test_the_timeline_picture_was_made_by_the_build(site: Site) -> None:
    if not site.pictures:
        pytest.skip("chromium is not installed: make test-tools (apt-get install chromium)")
    from PIL import Image

    shot = site.folder / "images" / "timeline.png"
    with Image.open(shot) as img:
        assert img.size[0] >= 1000
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colors) > 20, "the picture is blank"  # bars in several colours, text, grid
    tutorial = (site.folder / "tutorial" / "first-fleet" / "index.html").read_text(encoding="utf-8")
    assert 'src="../../images/timeline.png"' in tutorial


def test_the_docs_the_code_points_to_exist(site: Site) -> None:
    """Code cites the rules it follows as `docs/<page>.md#<anchor>`: each such
    pointer in zapcli/ and tests/ (and the Makefile, pyproject.toml) names a page and a
    heading anchor that the built site has."""
    pointer = re.compile(r"docs/([\w./-]+?)\.md(?:#([\w-]+))?")
    wanted: dict[tuple[str, str | None], str] = {}
    sources = [*(ROOT / "zapcli").rglob("*.py"), *(ROOT / "tests").rglob("*.py"), ROOT / "Makefile",
               ROOT / "pyproject.toml"]
    for path in sources:
        in_tests = path.is_relative_to(ROOT / "tests")
        for m in pointer.finditer(path.read_text(encoding="utf-8")):
            if in_tests and not m.group(1).startswith(("explanation/", "reference/", "how-to/", "tutorial/")):
                continue  # a test's own docs/x.md is its data, not a pointer
            wanted.setdefault((m.group(1), m.group(2)), str(path.relative_to(ROOT)))
    assert wanted, "no pointer into docs/ found: the pattern is wrong"
    bad = []
    for (page, anchor), where in sorted(wanted.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        html = site.folder / (page[:-len("index")] if page.endswith("index") else page + "/") / "index.html"
        if not html.is_file():
            bad.append(f"{where}: docs/{page}.md does not exist")
        elif anchor and anchor not in _parse(html).ids:
            bad.append(f"{where}: docs/{page}.md has no #{anchor}")
    assert not bad, "\n".join(bad)


def test_the_top_picture_was_made_by_the_build(site: Site) -> None:
    """`zapcli top` as the build ran it in tmux: a real screen, photographed."""
    import shutil

    if not site.pictures or shutil.which("tmux") is None:
        pytest.skip("chromium or tmux is not installed: make test-tools tmux")
    from PIL import Image

    with Image.open(site.folder / "images" / "top.png") as img:
        assert img.size[0] >= 1000
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colors) > 20, "the picture is blank"


def test_the_code_cites_no_document_the_repository_lacks() -> None:
    """The product's rules are cited as pointers into docs/, never as sections
    ("SPEC §N", "§N") of a specification the repository does not carry."""
    cited = re.compile(r"SPEC\s?§|§\s?\d")
    sources = [*(ROOT / "zapcli").rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
               *(ROOT / "tests").rglob("*.toml"), ROOT / "Makefile", ROOT / "pyproject.toml"]
    bad = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in sources
           for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
           if cited.search(line) and path.name != "test_site.py"]
    assert not bad, "cite docs/<page>.md#<anchor> instead:\n" + "\n".join(bad[:40])
