"""Check a Markdown file's relative links into docs/: each must name an existing file, and its #anchor, if any,
a heading of that file (as MkDocs' toc extension makes heading ids) or an explicit ``id="…"``. Exit status 1,
with one line per broken link, when any is broken. MkDocs checks the links inside docs/, not the README's.

Usage: python bin/lib/readme_links.py README.md
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import markdown
from markdown.extensions.toc import slugify

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def anchors(path: Path) -> set[str]:
    """The ids a page offers: its headings' ids (rendered as MkDocs renders them) and explicit id attributes."""
    html = markdown.markdown(path.read_text(encoding="utf-8"), extensions=["toc", "tables", "fenced_code",
                                                                           "attr_list"],
                             extension_configs={"toc": {"slugify": slugify}})
    return set(re.findall(r'\bid="([^"]+)"', html))


def broken_links(readme: Path) -> list[str]:
    text = INLINE_CODE.sub("", FENCE.sub("", readme.read_text(encoding="utf-8")))
    problems = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or not target.split("#")[0].startswith("docs/"):
            continue  # a URL, or a link that does not point into docs/
        file_part, _, anchor = target.partition("#")
        path = readme.parent / file_part
        if not path.is_file():
            problems.append(f"{readme}: {target}: no such file")
        elif anchor and anchor not in anchors(path):
            problems.append(f"{readme}: {target}: {file_part} has no heading or id '{anchor}'")
    return problems


def main(argv: list[str]) -> int:
    problems = broken_links(Path(argv[1] if len(argv) > 1 else "README.md"))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
