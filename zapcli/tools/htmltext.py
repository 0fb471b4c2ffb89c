"""A fetched HTML page as text a model reads well: Markdown, by markdownify
on beautifulsoup4's tree (both MIT, maintained), keeping headings, lists,
emphasis, code, links (made absolute against the page's address, so the
model can fetch them next) and tables (as Markdown tables).

Imports bs4 and markdownify when a page is converted (never at a runner's
start). Owns what is dropped before converting: what a reader never sees
(scripts, styles, templates, inline SVG, forms' hidden inputs), images
(their alt text stays), and the page's <head> but for its title, which
heads the text as `# Title` when the body does not start with it.
"""

from __future__ import annotations

import re
import urllib.parse

UNSEEN = ("script", "style", "noscript", "template", "svg", "iframe", "object", "embed",
          "canvas", "head")


def to_text(markup: str, base_url: str | None = None) -> str:
    """`markup` as Markdown text; `base_url` makes relative links absolute.
    Never raises on odd markup: the worst case is the tags stripped."""
    try:
        return _convert(markup, base_url)
    except Exception:  # noqa: BLE001 - a page we cannot parse is still text to the model
        import html

        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.unescape(markup))).strip()


def _convert(markup: str, base_url: str | None) -> str:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(markup, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup.find_all(UNSEEN):
        tag.decompose()
    for tag in soup.find_all("input", type="hidden"):
        tag.decompose()
    for img in soup.find_all("img"):
        alt = str(img.get("alt") or "").strip()
        if alt:
            img.replace_with(f"[image: {alt}]")
        else:
            img.decompose()
    if base_url:
        for a in soup.find_all("a", href=True):
            href = str(a["href"]).strip()
            if href.lower().startswith(("javascript:", "data:")):
                del a["href"]
            else:
                a["href"] = urllib.parse.urljoin(base_url, href)
    text = MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"],
                             escape_underscores=False, escape_asterisks=False,
                             escape_misc=False).convert_soup(soup)
    lines = [line.rstrip() for line in text.replace("\r", "").split("\n")]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if title and not body.lstrip("# ").startswith(title):
        return f"# {title}\n\n{body}"
    return body
