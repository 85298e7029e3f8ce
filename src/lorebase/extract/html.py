"""HTML (``.html``, ``.htm``, ``.xhtml``) to elements, via selectolax's lexbor parser.

The page is cleaned first (scripts, styles, navigation, page chrome and hidden elements are
removed from the tree, so no later step can leak their text), then the main content root is
walked in document order. Inline text is gathered into runs that become paragraphs at block
boundaries and at a double ``<br>``, which is how old table-layout pages separate paragraphs.
Lexbor gives no source positions, so elements carry no line numbers.

:func:`read_page` and :func:`add_page` are the same reading for a reader that puts several
pages into one document (the EPUB extractor, a chapter at a time).
"""

from __future__ import annotations

import re
from pathlib import PurePath

from selectolax.lexbor import LexborHTMLParser, LexborNode

from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.encoding import decode
from lorebase.types import DocumentKind, ElementKind, Extracted

# Never content: removed with everything inside them.
_DROP = (
    "script, style, noscript, template, svg, iframe, object, embed, canvas, audio, video, map, "
    "select, datalist, nav, button, [hidden], [aria-hidden=true], [role=navigation], "
    "[role=banner], [role=contentinfo], a.headerlink, .mw-editsection, .mw-jump-link"
)
# Page chrome: dropped at page level, kept inside an article or main (an article's own
# <header> usually holds its h1).
_CHROME = "header, footer, aside"
_CONTENT_TAGS = frozenset({"article", "main"})
# A <form> is dropped unless it wraps the page's content (ASP.NET pages put the whole body in
# one form): one holding any of these is kept.
_FORM_CONTENT = "main, article, [role=main], h1, h2, h3"
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
# Page chrome named by its class or id, whatever its tag: share buttons, breadcrumbs, site
# navigation boxes, a page's own table of contents (its headings are read where they stand).
_CHROME_NAME = re.compile(
    r"(?:^|[\s_-])(?:share|sharing|sharethis|social|breadcrumbs?|navbox|navbar|nav-panel"
    r"|sidebar|skip-link|toc|related-posts)(?:$|[\s_-])",
    re.I,
)
# Links to the neighbouring pages of a manual (GNU texinfo's "Next: …, Previous: …, Up: …
# [Contents][Index]" lines, Sphinx's "next/previous" bars).
_NEIGHBOUR_LINKS = "a[rel~=next], a[rel~=prev], a[rel~=previous], a[rel~=up], a[rel~=contents]"
_NEIGHBOUR_LABELS = re.compile(
    r"\b(?:next|previous|prev|up|contents|index)\b|[\s:,;|\[\]()»«·-]", re.I
)
_NEIGHBOUR_BLOCKS = frozenset({"p", "div", "td", "tr", "table", "li", "ul", "ol"})
MENU_ITEMS = 3
MENU_ITEM_WORDS = 6
"""A list of at least MENU_ITEMS items, each nothing but one link of at most MENU_ITEM_WORDS
words, is a menu (a site's or a sidebar's), not content."""
_SKIP_TAGS = frozenset({"head", "title", "meta", "link", "base", "img", "input", "wbr"})

_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LISTS = frozenset({"ul", "ol", "dl", "menu", "dir"})
# Elements that end the inline text run before them and start a new one after them.
_BLOCKS = (
    frozenset(
        {
            "address",
            "article",
            "aside",
            "blockquote",
            "body",
            "caption",
            "center",
            "dd",
            "details",
            "dialog",
            "div",
            "dt",
            "fieldset",
            "figcaption",
            "figure",
            "footer",
            "header",
            "hgroup",
            "hr",
            "html",
            "legend",
            "li",
            "main",
            "p",
            "section",
            "summary",
            "tbody",
            "td",
            "tfoot",
            "th",
            "thead",
            "tr",
        }
    )
    | _LISTS
    | _HEADINGS
)
# Inside one of these a table is a page layout, not data.
_STRUCTURE = "h1, h2, h3, h4, h5, h6, ul, ol, dl, pre, blockquote, article, section"
# A data-table cell holds a value or a short phrase; a longer one means the table lays out
# prose.
_MAX_CELL_CHARS = 500
_MAX_DEPTH = 200
_WHITESPACE = re.compile(r"[ \t\n\r\f]+")  # HTML whitespace: a no-break space is content
_CODE_CLASS = re.compile(r"(?:^|\s)(?:language|lang|highlight)-([A-Za-z0-9_+#-]+)")
_NO_LANGUAGE = frozenset({"default", "none", "text", "plain", "plaintext", "nohighlight"})


class HtmlExtractor(Extractor):
    kind = DocumentKind.HTML

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        decoded = decode(data, markup=True)
        tree = LexborHTMLParser(decoded.text)
        _clean(tree)
        builder = self._walk(data, _content_root(tree))
        if not builder.elements and tree.body is not None:
            # The chosen root was empty (an empty <main>, say): read the whole body instead.
            builder = self._walk(data, tree.body)
        title = _title(tree)
        if title and not any(element.text for element in builder.elements):
            # A page that is only its <title> (a bookmark, a stub record): the title is the
            # text a reader sees in the tab, so it is the document's one heading.
            builder.add(ElementKind.HEADING, title, level=1)
        return builder.build(title=title, encoding=decoded.encoding)

    def _walk(self, data: bytes, root: LexborNode | None) -> DocumentBuilder:
        builder = self.builder(data)
        if root is not None:
            _Walker(builder).walk(root)
        return builder


def read_page(text: str, *, chrome: bool = True) -> LexborHTMLParser:
    """``text`` parsed and cleaned as :class:`HtmlExtractor` cleans a page. ``chrome=False``
    keeps ``<header>``, ``<footer>`` and ``<aside>`` wherever they are: in a book's chapter
    they hold its heading and its notes, not a site's page chrome."""
    tree = LexborHTMLParser(text)
    _clean(tree, chrome=chrome)
    return tree


def add_page(builder: DocumentBuilder, tree: LexborHTMLParser, *, heading_offset: int = 0) -> None:
    """Add the elements of a page from :func:`read_page` to ``builder``, after those already
    there, as :class:`HtmlExtractor` reads a page (its content root, else its body). Every
    heading's level is moved by ``heading_offset`` (kept within 1-6), so a chapter whose top
    heading is an ``<h2>`` can sit at the level its book's table of contents gives it."""
    before = len(builder.elements)
    root = _content_root(tree)
    if root is not None:
        _Walker(builder, heading_offset).walk(root)
    body = tree.body
    if (
        len(builder.elements) == before
        and body is not None
        and (root is None or body.mem_id != root.mem_id)
    ):
        # The chosen root was empty (an empty <main>, say): read the whole body instead.
        _Walker(builder, heading_offset).walk(body)


# --- cleaning ---------------------------------------------------------------------------------


def _clean(tree: LexborHTMLParser, *, chrome: bool = True) -> None:
    """Remove what is never content, outermost nodes only (a removed node frees its subtree);
    page chrome too unless ``chrome`` is False."""
    doomed = list(tree.css(_DROP))
    if chrome:
        doomed += [node for node in tree.css(_CHROME) if not _inside_content(node)]
    doomed += [node for node in tree.css("form") if node.css_first(_FORM_CONTENT) is None]
    doomed += [node for node in tree.css("[style]") if _HIDDEN_STYLE.search(_attr(node, "style"))]
    doomed += [
        node
        for node in tree.css("[class], [id]")
        if node.tag not in ("html", "body", "main", "article")
        and _CHROME_NAME.search(f"{_attr(node, 'class')} {_attr(node, 'id')}")
    ]
    doomed += _neighbour_bars(tree)
    doomed += [node for node in tree.css("ul, ol") if _is_menu(node)]
    ids = {node.mem_id for node in doomed}
    outermost = [node for node in doomed if not _has_ancestor_in(node, ids)]
    for node in {node.mem_id: node for node in outermost}.values():
        node.decompose()


def _neighbour_bars(tree: LexborHTMLParser) -> list[LexborNode]:
    """The blocks that hold a manual's links to its neighbouring pages and nothing else but
    their labels ("Next:", "Up:", "[Index]"): the smallest block around each such link."""
    bars: dict[int, LexborNode] = {}
    for link in tree.css(_NEIGHBOUR_LINKS):
        block = link.parent
        while block is not None and block.tag not in _NEIGHBOUR_BLOCKS:
            block = block.parent
        if block is None or block.mem_id in bars:
            continue
        outside = _inline_text(block)
        for inner in block.css("a"):
            outside = outside.replace(_inline_text(inner), " ", 1)
        if not _NEIGHBOUR_LABELS.sub("", outside):
            bars[block.mem_id] = block
    return list(bars.values())


def _is_menu(node: LexborNode) -> bool:
    """A list of links and nothing else (see :data:`MENU_ITEMS`)."""
    items = [child for child in node.iter() if child.tag == "li"]
    if len(items) < MENU_ITEMS:
        return False
    for item in items:
        links = item.css("a")
        text = _inline_text(item)
        if len(links) != 1 or text != _inline_text(links[0]):
            return False
        if not text or len(text.split()) > MENU_ITEM_WORDS:
            return False
    return True


def _has_ancestor_tag(node: LexborNode, tag: str) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag == tag:
            return True
        parent = parent.parent
    return False


def _inside_content(node: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in _CONTENT_TAGS or _attr(parent, "role") == "main":
            return True
        parent = parent.parent
    return False


def _has_ancestor_in(node: LexborNode, ids: set[int]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False


def _attr(node: LexborNode, name: str) -> str:
    return (node.attributes.get(name) or "").strip().lower()


def _content_root(tree: LexborHTMLParser) -> LexborNode | None:
    """Where the page's own content lives: <main>, else role=main, else a sole <article>."""
    root = tree.css_first("main") or tree.css_first("[role=main]")
    if root is None:
        articles = tree.css("article")
        root = articles[0] if len(articles) == 1 else None
    return root or tree.body or tree.root


def _title(tree: LexborHTMLParser) -> str | None:
    """The <title>, else the first h1 (svg titles were removed with the svg)."""
    for selector in ("title", "h1"):
        node = tree.css_first(selector)
        if node is not None:
            text = _inline_text(node)
            if text:
                return text
    return None


# --- walking ----------------------------------------------------------------------------------


class _Walker:
    """Walks the tree in document order, turning block structure into elements.

    ``run`` collects the inline text of the block being read; a block boundary flushes it. In a
    list item the whole item is one element; elsewhere a double ``<br>`` splits paragraphs.
    """

    def __init__(self, builder: DocumentBuilder, heading_offset: int = 0) -> None:
        self.builder = builder
        self.heading_offset = heading_offset
        self.run: list[str] = []
        self.kind = ElementKind.PARAGRAPH

    def walk(self, root: LexborNode) -> None:
        self._children(root, 0)
        self._flush()

    def _children(self, node: LexborNode, depth: int) -> None:
        for child in node.iter(include_text=True):
            if child.is_text_node:
                self.run.append(_WHITESPACE.sub(" ", child.text_content or ""))
            elif child.is_element_node:
                self._element(child, depth + 1)

    def _element(self, node: LexborNode, depth: int) -> None:
        tag = node.tag or ""
        if tag in _SKIP_TAGS:
            return
        if depth > _MAX_DEPTH:  # pathological nesting: keep the text, skip the structure
            self.run.append(" " + _WHITESPACE.sub(" ", node.text(deep=True, separator=" ")))
        elif tag == "br":
            self.run.append("\n")
        elif tag in _HEADINGS:
            self._flush()
            level = min(max(int(tag[1]) + self.heading_offset, 1), 6)
            self.builder.add(ElementKind.HEADING, _inline_text(node), level=level)
        elif tag == "pre":
            self._flush()
            code = node.text(deep=True)
            self.builder.add(ElementKind.CODE, code, language=_code_language(node))
        elif tag == "table":
            self._flush()
            self._table(node, depth)
        elif tag == "li":
            self._flush()
            self._list_item(node, depth)
        elif tag in _BLOCKS:
            self._block(node, depth, tag)
        else:  # inline: its text joins the current run
            self._children(node, depth)

    def _block(self, node: LexborNode, depth: int, tag: str) -> None:
        if self.kind is ElementKind.LIST_ITEM and tag not in _LISTS:
            # A paragraph inside a list item is part of the item, on a line of its own.
            self.run.append("\n")
            self._children(node, depth)
            self.run.append("\n")
            return
        self._flush()
        self._children(node, depth)
        self._flush()

    def _list_item(self, node: LexborNode, depth: int) -> None:
        """One LIST_ITEM; a nested list flushes the text so far, so nothing is emitted twice."""
        outer, self.kind = self.kind, ElementKind.LIST_ITEM
        self._children(node, depth)
        self._flush()
        self.kind = outer

    def _table(self, table: LexborNode, depth: int) -> None:
        cells = _data_table_cells(table)
        if cells is None:
            outer, self.kind = self.kind, ElementKind.PARAGRAPH
            self._children(table, depth)
            self._flush()
            self.kind = outer
            return
        caption = table.css_first("caption")
        if caption is not None:
            self.builder.add(ElementKind.PARAGRAPH, _inline_text(caption))
        # Empty cells are dropped: they are spacing in most real tables (financial filings pad
        # every number with empty cells), and a row of values reads better without them.
        lines = [line for line in (" | ".join(c for c in row if c) for row in cells) if line]
        # A first row of header cells (<th>, or in <thead>) names the columns: every piece of
        # a long table repeats it.
        first = table.css_first("tr")
        named = first is not None and (
            first.css_first("th") is not None or _has_ancestor_tag(first, "thead")
        )
        header = lines[0] if named and len(lines) > 1 else None
        self.builder.add(ElementKind.TABLE, "\n".join(lines), header=header)

    def _flush(self) -> None:
        """Turn the collected run into elements: one list item, or paragraphs split at blank
        lines (a double ``<br>``)."""
        if not self.run:
            return
        lines = [" ".join(line.split()) for line in "".join(self.run).split("\n")]
        self.run = []
        if self.kind is ElementKind.LIST_ITEM:
            self.builder.add(ElementKind.LIST_ITEM, "\n".join(ln for ln in lines if ln))
            return
        paragraph: list[str] = []
        for line in [*lines, ""]:
            if line:
                paragraph.append(line)
            elif paragraph:
                self.builder.add(self.kind, "\n".join(paragraph))
                paragraph = []


def _rows(table: LexborNode) -> list[list[LexborNode]]:
    """The table's own rows (not those of nested tables), each a list of its cells."""
    row_nodes: list[LexborNode] = []
    for child in table.iter():
        if child.tag == "tr":
            row_nodes.append(child)
        elif child.tag in ("thead", "tbody", "tfoot"):
            row_nodes.extend(row for row in child.iter() if row.tag == "tr")
    return [[cell for cell in row.iter() if cell.tag in ("td", "th")] for row in row_nodes]


def _data_table_cells(table: LexborNode) -> list[list[str]] | None:
    """The cell texts of a grid of values; ``None`` for a table that lays out a page.

    Data: at least two rows and two columns, no cell over ``_MAX_CELL_CHARS`` characters, and no
    headings, lists, code, quotes, sections or paragraph breaks (``<br><br>``) inside. Anything
    else is walked as a container, so its prose comes out as paragraphs. Nested tables inside a
    data table are flattened into their cell's text.
    """
    rows = _rows(table)
    if len(rows) < 2 or max(len(row) for row in rows) < 2:
        return None
    if table.css_first(_STRUCTURE) is not None or _has_paragraph_break(table):
        return None
    cells = [[_inline_text(cell) for cell in row] for row in rows]
    if any(len(text) > _MAX_CELL_CHARS for row in cells for text in row):
        return None
    return cells


def _has_paragraph_break(node: LexborNode) -> bool:
    """Whether two ``<br>`` follow each other with only whitespace between (CSS ``br + br``
    would also match ``<br>text<br>``, which is just a multi-line cell)."""
    for br in node.css("br"):
        sibling = br.next
        while (
            sibling is not None
            and sibling.is_text_node
            and not (sibling.text_content or "").strip()
        ):
            sibling = sibling.next
        if sibling is not None and sibling.tag == "br":
            return True
    return False


def _inline_text(node: LexborNode) -> str:
    """A node's text on one line, with a space wherever a block or ``<br>`` separates words."""
    out: list[str] = []
    _collect(node, out, 0)
    return " ".join("".join(out).split())


def _collect(node: LexborNode, out: list[str], depth: int) -> None:
    if depth > _MAX_DEPTH:
        out.append(" " + node.text(deep=True, separator=" "))
        return
    for child in node.iter(include_text=True):
        if child.is_text_node:
            out.append(child.text_content or "")
        elif child.is_element_node:
            tag = child.tag or ""
            block = tag in _BLOCKS or tag in ("br", "table", "pre")
            if block:
                out.append(" ")
            _collect(child, out, depth + 1)
            if block:
                out.append(" ")


def _code_language(pre: LexborNode) -> str | None:
    """From a ``language-x``/``lang-x``/``highlight-x`` class on the <pre>, its <code>, or the
    wrappers highlighters put around it (Sphinx: ``<div class="highlight-python">``)."""
    candidates = [pre, pre.css_first("code"), pre.parent]
    if pre.parent is not None:
        candidates.append(pre.parent.parent)
    for node in candidates:
        if node is None:
            continue
        match = _CODE_CLASS.search(node.attributes.get("class") or "")
        if match:
            language = match.group(1).lower()
            return None if language in _NO_LANGUAGE else language
    return None
