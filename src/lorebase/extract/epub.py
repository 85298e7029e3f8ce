"""EPUB e-books (``.epub``, EPUB 2 and 3): the spine's documents in reading order, each chapter
read through the HTML reader (:func:`lorebase.extract.html.add_page`) into one document.

The package is read with ``zipfile`` and the OPF directly, not EbookLib: EbookLib loads every
manifest item (images and fonts too) and refuses a whole book when one listed file is missing,
while a reader of the spine alone opens only the chapters and reads what is there.

Kept: every (X)HTML document of the spine, in spine order, with its headings, paragraphs,
lists, tables and code; chapter headings are moved to the depth the table of contents gives
the chapter, so a book whose chapters start at ``<h2>`` still has them as its top headings;
a chapter without a heading of its own gets its title from the table of contents (EPUB 3 nav,
else the EPUB 2 NCX). The book's title, creators, language, date, publisher, rights, subjects
and description from the OPF metadata. Left out: the navigation document, cover pages (the
guide's or landmarks' cover, a document named ``cover``), contents pages (``epub:type="toc"``
or a page that is nothing but links to the other chapters), page-break markers, images,
styles and scripts. A book whose chapters are encrypted (DRM named in
``META-INF/encryption.xml``) is ``encrypted``; font obfuscation is not encryption of the text.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import PurePath
from urllib.parse import unquote

from lxml import etree
from selectolax.lexbor import LexborHTMLParser, LexborNode

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.containers import check_zip
from lorebase.extract.encoding import decode
from lorebase.extract.html import add_page, read_page
from lorebase.types import ElementKind, Extracted, FailureReason, MetadataValue

_CONTAINER = "META-INF/container.xml"
_ENCRYPTION = "META-INF/encryption.xml"
# Font obfuscation (IDPF and Adobe) scrambles embedded fonts only; the text stays readable.
_FONT_OBFUSCATION = frozenset(
    {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}
)
_PAGE_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/html"})
_NCX_TYPE = "application/x-dtbncx+xml"
# Structural semantics (epub:type) of parts of a page that are not the book's text.
_NOT_TEXT_TYPES = frozenset({"toc", "landmarks", "page-list", "pagebreak", "cover", "loi", "lot"})
_COVER_NAMES = frozenset({"cover", "coverpage", "cover-page"})
# A page that is nothing but links to other chapters is a contents page: at least this many
# such links, making up at least this share of its text, or all of it but a heading's worth
# of characters (spaces not counted).
_CONTENTS_LINKS = 3
_CONTENTS_SHARE = 0.8
_CONTENTS_OTHER_CHARS = 40
# OPF metadata kept, Dublin Core element -> metadata key.
_DUBLIN_CORE = {
    "title": "title",
    "creator": "author",
    "language": "language",
    "date": "date",
    "publisher": "publisher",
    "rights": "rights",
    "subject": "subject",
    "description": "description",
}
_HEADINGS = "h1, h2, h3, h4, h5, h6"
# XHTML may close any element in its start tag (<a id="p3"/>); an HTML parser reads that as an
# open tag, and an open <title/> or <script/> would swallow the rest of the page.
_VOID = "area|base|br|col|embed|hr|img|input|link|meta|param|source|track|wbr"
_SELF_CLOSED = re.compile(rf"<(?!(?:{_VOID})[\s/>])([A-Za-z][\w:.-]*)(\s[^<>]*)?/>")
_TAGS = re.compile(r"<[^>]*>")
_XML_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, recover=True, remove_comments=True
)


@dataclass(frozen=True, slots=True)
class _Item:
    """One manifest item: its path in the zip, media type and properties."""

    path: str
    media_type: str
    properties: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Entry:
    """A document's entry in the table of contents: its title and depth (1 at the top)."""

    title: str
    depth: int


@dataclass(slots=True)
class _Package:
    """What the OPF says: metadata, manifest items by id, the spine's item ids in order, the
    NCX's id and the paths the guide calls a cover or a contents page."""

    metadata: dict[str, list[str]] = field(default_factory=dict)
    manifest: dict[str, _Item] = field(default_factory=dict)
    spine: list[str] = field(default_factory=list)
    ncx: str | None = None
    skipped: set[str] = field(default_factory=set)


class EpubExtractor(Extractor):
    kind = "epub"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        archive = check_zip(data, self.settings.max_expanded_bytes)
        files = _Files(archive)
        opf_path = _package_path(files)
        root = _xml(files.read(opf_path)) if opf_path else None
        if root is None:
            raise ExtractionFailed(FailureReason.CORRUPT, "no readable package document (OPF)")
        package = _read_package(root, posixpath.dirname(opf_path or ""))
        spine = [package.manifest[i] for i in package.spine if i in package.manifest]
        missing = len(package.spine) - len(spine)
        if _encrypted(files) & {item.path for item in spine}:
            raise ExtractionFailed(
                FailureReason.ENCRYPTED,
                "the chapters are encrypted (DRM): open the book in "
                "the reader it was bought for, or index a copy without DRM",
            )
        toc, nav_skipped, toc_title = _table_of_contents(files, package)
        skipped = package.skipped | nav_skipped
        chapters = {item.path for item in spine}
        builder = self.builder(data)
        offset = 0
        for item in spine:
            if item.path in skipped or item.media_type not in _PAGE_TYPES:
                continue
            raw = files.read(item.path)
            if raw is None:
                missing += 1
                continue
            offset = _add_chapter(builder, raw, item.path, toc.get(item.path), offset, chapters)
        warnings = (f"{missing} spine documents missing or unreadable",) if missing else ()
        metadata: dict[str, MetadataValue] = {
            key: tuple(values) if len(values) > 1 else values[0]
            for key, values in package.metadata.items()
        }
        titles = package.metadata.get("title")
        return builder.build(
            title=titles[0] if titles else toc_title, warnings=warnings, metadata=metadata
        )


# --- the package ------------------------------------------------------------------------------


class _Files:
    """The zip's members by name, found whatever the case of the name (books made on
    case-insensitive file systems link ``Chapter1.xhtml`` as ``chapter1.xhtml``)."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive
        self.names = {info.filename: info for info in archive.infolist() if not info.is_dir()}
        self.folded = {name.casefold(): info for name, info in self.names.items()}

    def read(self, name: str) -> bytes | None:
        """The member's bytes; None when it is absent or damaged (a bad checksum, a broken
        or unknown compression)."""
        info = self.names.get(name) or self.folded.get(name.casefold())
        if info is None:
            return None
        try:
            return self.archive.read(info)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError):
            return None


def _xml(data: bytes | None) -> etree._Element | None:
    """Parsed XML without entities or network; what a damaged file still holds, else None."""
    if not data:
        return None
    try:
        return etree.fromstring(data, _XML_PARSER)
    except (etree.XMLSyntaxError, ValueError):
        return None


def _local(element: etree._Element) -> str:
    tag = element.tag
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _text(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def _href(base: str, href: str) -> str:
    """A link's target as a path in the zip: relative to ``base``, decoded, no fragment."""
    target = unquote(href.partition("#")[0].strip())
    return posixpath.normpath(posixpath.join(base, target)) if target else ""


def _package_path(files: _Files) -> str | None:
    """The OPF named by ``META-INF/container.xml``, else the first ``.opf`` in the zip."""
    container = _xml(files.read(_CONTAINER))
    if container is not None:
        for element in container.iter():
            if _local(element) == "rootfile" and element.get("full-path"):
                return unquote(element.get("full-path", ""))
    return next((name for name in files.names if name.lower().endswith(".opf")), None)


def _read_package(root: etree._Element, base: str) -> _Package:
    package = _Package()
    for element in root.iter():
        name = _local(element)
        if name in _DUBLIN_CORE:
            value = _text(element)
            if name == "description":
                value = " ".join(_TAGS.sub(" ", value).split())
            if value:
                package.metadata.setdefault(_DUBLIN_CORE[name], []).append(value)
        elif name == "item" and element.get("id") and element.get("href"):
            package.manifest[element.get("id", "")] = _Item(
                path=_href(base, element.get("href", "")),
                media_type=(element.get("media-type") or "").strip().lower(),
                properties=frozenset((element.get("properties") or "").split()),
            )
        elif name == "spine":
            package.ncx = element.get("toc")
        elif name == "itemref" and element.get("idref"):
            package.spine.append(element.get("idref", ""))
        elif name == "reference" and (element.get("type") or "").lower() in ("cover", "toc"):
            package.skipped.add(_href(base, element.get("href", "")))
    for item_id, item in package.manifest.items():
        stem = posixpath.splitext(posixpath.basename(item.path))[0].lower()
        if "nav" in item.properties or item_id.lower() in _COVER_NAMES or stem in _COVER_NAMES:
            package.skipped.add(item.path)
    return package


def _encrypted(files: _Files) -> set[str]:
    """The paths ``META-INF/encryption.xml`` says are encrypted (font obfuscation aside)."""
    root = _xml(files.read(_ENCRYPTION))
    paths: set[str] = set()
    if root is None:
        return paths
    for data in root.iter():
        if _local(data) != "EncryptedData":
            continue
        method = next((e for e in data.iter() if _local(e) == "EncryptionMethod"), None)
        if method is not None and method.get("Algorithm") in _FONT_OBFUSCATION:
            continue
        for reference in data.iter():
            if _local(reference) == "CipherReference" and reference.get("URI"):
                paths.add(_href("", reference.get("URI", "")))
    return paths


# --- the table of contents --------------------------------------------------------------------


def _table_of_contents(
    files: _Files, package: _Package
) -> tuple[dict[str, _Entry], set[str], str | None]:
    """Each document's entry in the table of contents (EPUB 3 nav, else the NCX), the paths
    the nav's landmarks call a cover or a contents page, and the NCX's book title."""
    landmarks: set[str] = set()
    nav = next((i for i in package.manifest.values() if "nav" in i.properties), None)
    if nav is not None:
        toc, landmarks = _nav(_page_text(files.read(nav.path)), nav.path)
        if toc:
            return toc, landmarks, None
    ncx = package.manifest.get(package.ncx or "")
    if ncx is None:
        ncx = next((i for i in package.manifest.values() if i.media_type == _NCX_TYPE), None)
    root = _xml(files.read(ncx.path)) if ncx is not None else None
    if ncx is None or root is None:
        return {}, landmarks, None
    toc = {}
    title = next((_text(e) for e in root.iter() if _local(e) == "docTitle"), None)
    nav_map = next((e for e in root.iter() if _local(e) == "navMap"), None)
    if nav_map is not None:
        _ncx_points(nav_map, posixpath.dirname(ncx.path), 1, toc)
    return toc, landmarks, title or None


def _page_text(raw: bytes | None) -> str:
    """A page's bytes as text; empty when it is missing or binary."""
    if raw is None:
        return ""
    try:
        return decode(raw, markup=True).text
    except ExtractionFailed:
        return ""


def _ncx_points(parent: etree._Element, base: str, depth: int, toc: dict[str, _Entry]) -> None:
    for point in parent:
        if _local(point) != "navPoint":
            continue
        label = next((_text(e) for e in point.iter() if _local(e) == "navLabel"), "")
        content = next((e for e in point if _local(e) == "content"), None)
        if content is not None and label:
            _add_entry(toc, _href(base, content.get("src", "")), label, depth)
        _ncx_points(point, base, depth + 1, toc)


def _nav(html: str, nav_path: str) -> tuple[dict[str, _Entry], set[str]]:
    """The toc nav's entries and the landmarks' cover and contents pages, from the EPUB 3
    navigation document."""
    tree = LexborHTMLParser(html)
    base = posixpath.dirname(nav_path)
    toc: dict[str, _Entry] = {}
    skipped: set[str] = set()
    navs = tree.css("nav")
    for nav in navs:
        types = _types(nav)
        if "landmarks" in types:
            for link in nav.css("a[href]"):
                if _types(link) & {"cover", "toc"}:
                    skipped.add(_href(base, link.attributes.get("href") or ""))
        elif "toc" in types:
            _nav_list(nav, base, 1, toc)
    if not toc and navs and not any(_types(nav) for nav in navs):
        _nav_list(navs[0], base, 1, toc)
    return toc, skipped


def _nav_list(node: LexborNode, base: str, depth: int, toc: dict[str, _Entry]) -> None:
    """The ``<li>`` entries of the lists under ``node`` (not under a nested list), then theirs.
    An entry without a link (a ``<span>`` grouping others) adds no depth: no heading of the
    text stands for it."""
    for child in node.iter():
        if child.tag in ("ol", "ul"):
            for entry in child.iter():
                if entry.tag != "li":
                    continue
                link = next((n for n in entry.iter() if n.tag == "a"), None)
                label, target = "", ""
                if link is not None:
                    label = " ".join(link.text(deep=True).split())
                    target = _href(base, link.attributes.get("href") or "")
                if label and target:
                    _add_entry(toc, target, label, depth)
                _nav_list(entry, base, depth + 1 if label and target else depth, toc)
        elif child.tag not in ("li", "a"):
            _nav_list(child, base, depth, toc)


def _add_entry(toc: dict[str, _Entry], path: str, title: str, depth: int) -> None:
    """The first entry naming a document gives its title; the shallowest its depth."""
    known = toc.get(path)
    toc[path] = (
        _Entry(title, depth) if known is None else _Entry(known.title, min(depth, known.depth))
    )


def _types(node: LexborNode) -> set[str]:
    return set((node.attributes.get("epub:type") or "").lower().split())


# --- the chapters -----------------------------------------------------------------------------


def _add_chapter(
    builder: DocumentBuilder,
    raw: bytes,
    path: str,
    entry: _Entry | None,
    offset: int,
    chapters: set[str],
) -> int:
    """Add one spine document; return the heading offset that documents after it, which the
    table of contents does not name (a chapter split into files), keep using."""
    text = _page_text(raw)  # empty when binary: the rest of the book still reads
    tree = read_page(_SELF_CLOSED.sub(r"<\1\2></\1>", text), chrome=False)
    _drop_not_text(tree)
    if _is_contents_page(tree, posixpath.dirname(path), chapters - {path}):
        return offset
    levels = [int((node.tag or "h1")[1]) for node in tree.css(_HEADINGS) if node.text(strip=True)]
    if entry is not None:
        depth = min(entry.depth, 6)
        if levels:
            offset = depth - min(levels)
        else:
            offset = depth
            if tree.body is not None and tree.body.text(strip=True):
                builder.add(ElementKind.HEADING, entry.title, level=depth)
    add_page(builder, tree, heading_offset=offset)
    return offset


def _drop_not_text(tree: LexborHTMLParser) -> None:
    """Remove the parts whose ``epub:type`` says they are not the book's text (an inline
    contents list, page-break markers), outermost first (a removed node frees its subtree)."""
    doomed = [node for node in tree.css("[epub\\:type]") if _types(node) & _NOT_TEXT_TYPES]
    ids = {node.mem_id for node in doomed}
    outermost = []
    for node in doomed:
        parent = node.parent
        while parent is not None and parent.mem_id not in ids:
            parent = parent.parent
        if parent is None:
            outermost.append(node)
    for node in outermost:
        node.decompose()


def _is_contents_page(tree: LexborHTMLParser, base: str, others: set[str]) -> bool:
    """Whether the page is nothing but links to the book's other documents."""
    body = tree.body
    if body is None:
        return False
    total = len("".join(body.text(deep=True).split()))
    linked = 0
    links = 0
    for link in body.css("a[href]"):
        if _href(base, link.attributes.get("href") or "") in others:
            links += 1
            linked += len("".join(link.text(deep=True).split()))
    if links < _CONTENTS_LINKS:
        return False
    return linked >= _CONTENTS_SHARE * total or total - linked <= _CONTENTS_OTHER_CHARS
