"""Citations shown in the README and the docs are ones lorebase can produce: only a PDF has
pages, so a page number is never shown beside another kind of file (a PDF attached to a mail
is cited through the mail: ``inbox/figures.eml › report.pdf (p. 3)``)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# ``path › heading › ... (p. 12)``: the cited path, then a page.
PAGE_CITATION = re.compile(r"([\w./~-]+\.(\w+))((?: › [^\n()]*)?) \(p\. \d")


def test_only_pdf_citations_show_a_page() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    wrong = [
        f"{page.name}: {match.group(1)}"
        for page in pages
        for match in PAGE_CITATION.finditer(page.read_text())
        if match.group(2).lower() != "pdf" and ".pdf" not in match.group(3).lower()
    ]
    assert not wrong
