"""What a reader of an HTML report sees, as text: each table's rows and each section's
text, keyed by the ``<section id>`` they sit in ("page" outside any section). The
cross-view test reads the numbers from here, not from the data the page was made of."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

Table = list[dict[str, str]]
"""A table's body rows, each keyed by its column's header text."""


def _squash(parts: list[str]) -> str:
    return " ".join("".join(parts).split())


@dataclass
class Page:
    tables: dict[str, list[Table]] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)

    def table(self, section: str, first_column: str) -> dict[str, dict[str, str]]:
        """The one table of ``section`` whose first header is ``first_column``, by the text
        of each row's first cell (an arm's colour dot left out)."""
        found = [t for t in self.tables.get(section, []) if t and next(iter(t[0])) == first_column]
        assert len(found) == 1, f"{len(found)} tables headed {first_column!r} in {section!r}"
        return {row[first_column].lstrip("● "): row for row in found[0]}


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.section = "page"
        self.text: dict[str, list[str]] = {}
        self.header: list[str] = []
        self.row: list[str] | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section":
            self.section = dict(attrs).get("id") or ""
        elif tag == "table":
            self.page.tables.setdefault(self.section, []).append([])
            self.header = []
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append(_squash(self.cell))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if not self.header:
                self.header = self.row
            else:
                self.page.tables[self.section][-1].append(
                    dict(zip(self.header, self.row, strict=True))
                )
            self.row = None
        elif tag == "section":
            self.section = "page"

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        self.text.setdefault(self.section, []).append(data)


def read_page(html: str) -> Page:
    """Parse one report page (the markup of ``harness.report.render.html``)."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    reader.page.text = {k: _squash(v) for k, v in reader.text.items()}
    return reader.page
