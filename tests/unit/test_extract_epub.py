"""EPUB extraction: the spine in reading order through the HTML reader, chapter headings as
the trail, the table of contents for titles and depth, the OPF metadata, and the ways a book
fails (truncated, a zip bomb, missing chapters, DRM)."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath

import pytest
from ebooklib import epub

from lorebase.chunk import chunk_document
from lorebase.errors import ExtractionFailed
from lorebase.extract.registry import extract_bytes
from lorebase.extract.sandbox import ExtractionPool
from lorebase.settings import MB, ChunkSettings, ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason

BOOK = PurePath("book.epub")
OPF_NS = 'xmlns="http://www.idpf.org/2007/opf" xmlns:dc="http://purl.org/dc/elements/1.1/"'
CONTAINER = (
    '<?xml version="1.0"?><container version="1.0" '
    'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
    '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)
METADATA = (
    "<dc:title>The Field Guide</dc:title><dc:creator>Ada Author</dc:creator>"
    "<dc:creator>Bob Second</dc:creator><dc:language>en</dc:language>"
    "<dc:date>2021-05-01</dc:date><dc:publisher>Quiet Press</dc:publisher>"
    "<dc:rights>All rights reserved.</dc:rights><dc:identifier id='id'>urn:x</dc:identifier>"
)


def page(body: str, title: str = "The Field Guide") -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?><!DOCTYPE html>'
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
        f"<head><title>{title}</title></head><body>{body}</body></html>"
    )


def nav(entries: str, landmarks: str = "") -> str:
    return page(
        f'<nav epub:type="toc"><h1>Contents</h1><ol>{entries}</ol></nav>'
        + (f'<nav epub:type="landmarks"><ol>{landmarks}</ol></nav>' if landmarks else "")
    )


def make_epub(
    chapters: Mapping[str, str],
    spine: Sequence[str] | None = None,
    *,
    toc: str | None = None,
    ncx: str | None = None,
    metadata: str = METADATA,
    extra: Mapping[str, bytes | str] | None = None,
    guide: str = "",
) -> bytes:
    """An EPUB whose chapters are ``OEBPS/<name>`` (XHTML text), listed in the manifest in
    order; ``spine`` names the manifest ids read (the names without extension; default: all
    chapters). ``toc`` is the nav document's body (manifest id ``nav``), ``ncx`` an NCX."""
    items = [
        f'<item id="{name.rsplit(".", 1)[0]}" href="{name}" media-type="application/xhtml+xml"/>'
        for name in chapters
    ]
    files: dict[str, bytes | str] = {f"OEBPS/{name}": text for name, text in chapters.items()}
    if toc is not None:
        items.append(
            '<item id="nav" href="nav.xhtml" properties="nav" media-type="application/xhtml+xml"/>'
        )
        files["OEBPS/nav.xhtml"] = toc
    if ncx is not None:
        items.append('<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>')
        files["OEBPS/toc.ncx"] = ncx
    order = spine if spine is not None else [name.rsplit(".", 1)[0] for name in chapters]
    itemrefs = "".join(f'<itemref idref="{idref}"/>' for idref in order)
    spine_toc = ' toc="ncx"' if ncx is not None else ""
    opf = (
        f'<?xml version="1.0"?><package {OPF_NS} version="3.0" unique-identifier="id">'
        f"<metadata>{metadata}</metadata><manifest>{''.join(items)}</manifest>"
        f"<spine{spine_toc}>{itemrefs}</spine>{guide}</package>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", "application/epub+zip", zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", CONTAINER)
        archive.writestr("OEBPS/content.opf", opf)
        for name, content in {**files, **(extra or {})}.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def extract(data: bytes, settings: ExtractSettings | None = None) -> Extracted:
    extracted = extract_bytes(data, BOOK, settings or ExtractSettings())
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
    return extracted


def failure(data: bytes, settings: ExtractSettings | None = None) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, settings)
    return caught.value


def headings(extracted: Extracted) -> list[tuple[int, str]]:
    return [(e.level, e.text) for e in extracted.elements if e.kind is ElementKind.HEADING]


def trail_of(extracted: Extracted, phrase: str) -> tuple[str, ...]:
    """The heading trail of the chunk that holds ``phrase``: what a citation shows."""
    for chunk in chunk_document(extracted, ChunkSettings()):
        if phrase in chunk.text:
            return chunk.position.trail
    raise AssertionError(f"{phrase!r} is in no chunk")


# -- reading -------------------------------------------------------------------------------------


def test_spine_order_headings_lists_tables_and_code() -> None:
    data = make_epub(
        {
            "two.xhtml": page("<h1>Second</h1><p>Later words.</p>"),
            "one.xhtml": page(
                "<h1>First</h1><p>Opening words.</p><ul><li>an item</li></ul>"
                "<table><tr><th>Name</th><th>Size</th></tr><tr><td>a</td><td>1</td></tr></table>"
                '<pre><code class="language-python">print("hi")</code></pre>'
            ),
        },
        spine=["one", "two"],
    )
    extracted = extract(data)
    kinds = [(e.kind, e.text) for e in extracted.elements]
    assert kinds == [
        (ElementKind.HEADING, "First"),
        (ElementKind.PARAGRAPH, "Opening words."),
        (ElementKind.LIST_ITEM, "an item"),
        (ElementKind.TABLE, "Name | Size\na | 1"),
        (ElementKind.CODE, 'print("hi")'),
        (ElementKind.HEADING, "Second"),
        (ElementKind.PARAGRAPH, "Later words."),
    ]
    assert next(e for e in extracted.elements if e.kind is ElementKind.CODE).language == "python"
    assert trail_of(extracted, "Later words.") == ("Second",)


def test_opf_metadata_and_title() -> None:
    extracted = extract(make_epub({"c.xhtml": page("<p>Body.</p>")}))
    assert extracted.title == "The Field Guide"
    assert extracted.kind == "epub"
    assert dict(extracted.metadata) == {
        "title": "The Field Guide",
        "author": ("Ada Author", "Bob Second"),
        "language": "en",
        "date": "2021-05-01",
        "publisher": "Quiet Press",
        "rights": "All rights reserved.",
    }


def test_nav_document_and_cover_are_not_body_text() -> None:
    toc = nav(
        '<li><a href="c1.xhtml">Chapter One</a></li>',
        landmarks='<li><a epub:type="cover" href="jacket.xhtml">Cover</a></li>',
    )
    data = make_epub(
        {
            "jacket.xhtml": page("<p>JACKET BLURB</p>"),
            "cover.xhtml": page('<img src="c.jpg" alt="Cover"/><p>COVER WORDS</p>'),
            "c1.xhtml": page("<h1>Chapter One</h1><p>Story.</p>"),
        },
        spine=["jacket", "cover", "nav", "c1"],
        toc=toc,
    )
    extracted = extract(data)
    assert "Contents" not in extracted.text
    assert "JACKET" not in extracted.text and "COVER" not in extracted.text
    assert extracted.text == "Chapter One\n\nStory."


def test_guide_cover_and_contents_pages_are_skipped() -> None:
    guide = (
        '<guide><reference type="cover" href="front.xhtml"/>'
        '<reference type="toc" href="listing.xhtml"/></guide>'
    )
    data = make_epub(
        {
            "front.xhtml": page("<p>FRONT</p>"),
            "listing.xhtml": page("<p>LISTING</p>"),
            "c1.xhtml": page("<h1>One</h1><p>Story.</p>"),
        },
        guide=guide,
    )
    assert extract(data).text == "One\n\nStory."


def test_a_page_of_links_to_the_chapters_is_a_contents_page() -> None:
    links = "".join(f'<p><a href="c{i}.xhtml">Chapter {i}</a></p>' for i in range(1, 4))
    data = make_epub(
        {
            "contents.xhtml": page(f"<h1>Contents</h1>{links}"),
            **{f"c{i}.xhtml": page(f"<h1>Chapter {i}</h1><p>Text {i}.</p>") for i in range(1, 4)},
        }
    )
    extracted = extract(data)
    assert "Contents" not in extracted.text
    assert headings(extracted) == [(1, "Chapter 1"), (1, "Chapter 2"), (1, "Chapter 3")]


def test_epub_type_toc_and_page_breaks_are_dropped() -> None:
    body = (
        '<section epub:type="frontmatter toc"><h1>Brief Contents</h1><ol><li>x</li></ol></section>'
    )
    chapter = page('<h1>One</h1><p>Before <span epub:type="pagebreak">17</span>after.</p>')
    extracted = extract(make_epub({"brief.xhtml": page(body), "c1.xhtml": chapter}))
    assert extracted.text == "One\n\nBefore after."


def test_toc_title_for_a_chapter_without_a_heading() -> None:
    toc = nav(
        '<li><a href="c1.xhtml">Chapter One: The Start</a></li>'
        '<li><a href="c2.xhtml#top">Chapter Two</a></li>'
    )
    data = make_epub(
        {"c1.xhtml": page("<p>First body.</p>"), "c2.xhtml": page("<p>Second body.</p>")},
        toc=toc,
    )
    extracted = extract(data)
    assert headings(extracted) == [(1, "Chapter One: The Start"), (1, "Chapter Two")]
    assert trail_of(extracted, "Second body.") == ("Chapter Two",)


def test_chapter_headings_move_to_their_toc_depth() -> None:
    # Chapters start at <h2>/<h3>; the toc nests chapters in a part: part 1, chapters 2.
    toc = nav(
        '<li><a href="part.xhtml">Part I</a><ol>'
        '<li><a href="c1.xhtml">Chapter 1</a></li><li><a href="c2.xhtml">Chapter 2</a></li>'
        "</ol></li>"
    )
    data = make_epub(
        {
            "part.xhtml": page("<h2>Part I</h2><p>Part intro.</p>"),
            "c1.xhtml": page("<h3>Chapter 1</h3><p>One.</p><h4>A section</h4><p>Deep.</p>"),
            "c1b.xhtml": page("<h4>Continued section</h4><p>Split file.</p>"),
            "c2.xhtml": page("<h3>Chapter 2</h3><p>Two.</p>"),
        },
        toc=toc,
    )
    extracted = extract(data)
    assert headings(extracted) == [
        (1, "Part I"),
        (2, "Chapter 1"),
        (3, "A section"),
        (3, "Continued section"),  # a file the toc does not name keeps its chapter's shift
        (2, "Chapter 2"),
    ]
    assert trail_of(extracted, "Deep.") == ("Part I", "Chapter 1", "A section")
    assert trail_of(extracted, "Two.") == ("Part I", "Chapter 2")


def test_epub2_ncx_gives_titles_when_there_is_no_nav() -> None:
    ncx = (
        '<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
        "<docTitle><text>NCX Title</text></docTitle><navMap>"
        '<navPoint id="p1" playOrder="1"><navLabel><text>Opening</text></navLabel>'
        '<content src="c1.xhtml"/></navPoint></navMap></ncx>'
    )
    data = make_epub({"c1.xhtml": page("<p>Words.</p>")}, ncx=ncx, metadata="")
    extracted = extract(data)
    assert headings(extracted) == [(1, "Opening")]
    assert extracted.title == "NCX Title"


def test_xhtml_self_closed_elements_do_not_swallow_the_page() -> None:
    body = '<p>Start <a id="p3"/>middle</p><script src="x.js"/><p>End of chapter.</p>'
    chapter = page(body).replace("<title>The Field Guide</title>", "<title/>")
    extracted = extract(make_epub({"c.xhtml": chapter}))
    assert extracted.text == "Start middle\n\nEnd of chapter."


def test_header_and_aside_inside_a_chapter_are_kept() -> None:
    body = (
        "<section><header><h1>Chapter 9</h1></header><p>Text.</p>"
        '<aside epub:type="footnote"><p>A note.</p></aside></section>'
    )
    extracted = extract(make_epub({"c.xhtml": page(body)}))
    assert extracted.text == "Chapter 9\n\nText.\n\nA note."


def test_a_book_written_by_ebooklib() -> None:
    book = epub.EpubBook()
    book.set_identifier("id1")
    book.set_title("Made With EbookLib")
    book.set_language("de")
    book.add_author("Erika Muster")
    chapter = epub.EpubHtml(title="Kapitel Eins", file_name="k1.xhtml", lang="de")
    chapter.content = "<p>Grüße aus der Küche.</p>"
    book.add_item(chapter)
    book.toc = [epub.Link("k1.xhtml", "Kapitel Eins", "k1")]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", chapter]
    buffer = io.BytesIO()
    epub.write_epub(buffer, book)
    extracted = extract(buffer.getvalue())
    assert extracted.title == "Made With EbookLib"
    assert extracted.metadata["author"] == "Erika Muster"
    assert extracted.metadata["language"] == "de"
    assert "Grüße aus der Küche." in extracted.text
    assert trail_of(extracted, "Grüße") == ("Kapitel Eins",)


# -- failures ------------------------------------------------------------------------------------


def test_truncated_book_is_corrupt() -> None:
    data = make_epub({"c.xhtml": page("<p>Words.</p>" * 200)})
    assert failure(data[: len(data) // 2]).reason is FailureReason.CORRUPT


def test_not_a_zip_is_corrupt() -> None:
    assert failure(b"<html><p>not a book</p></html>").reason is FailureReason.CORRUPT


def test_a_zip_without_a_package_is_corrupt() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
    assert failure(buffer.getvalue()).reason is FailureReason.CORRUPT


def test_zip_bomb_is_too_large() -> None:
    data = make_epub(
        {"c.xhtml": page("<p>Words.</p>")}, extra={"OEBPS/images/pad.bin": bytes(200 * MB)}
    )
    assert len(data) < 1 * MB
    started = time.monotonic()
    assert failure(data).reason is FailureReason.TOO_LARGE
    assert time.monotonic() - started < 5


def test_zip_bomb_in_the_sandbox_is_too_large() -> None:
    data = make_epub(
        {"c.xhtml": page("<p>Words.</p>")}, extra={"OEBPS/images/pad.bin": bytes(64 * MB)}
    )
    with ExtractionPool(ExtractSettings(max_expanded_bytes=32 * MB)) as pool:
        with pytest.raises(ExtractionFailed) as caught:
            pool.extract(data, BOOK)
        assert caught.value.reason is FailureReason.TOO_LARGE
        assert pool.extract(make_epub({"c.xhtml": page("<p>Fine.</p>")}), BOOK).text == "Fine."


def test_spine_naming_missing_files_reads_what_is_there() -> None:
    # "ghost" is in no manifest; "absent" is in the manifest, but its file is not in the zip.
    absent = b'<item id="absent" href="absent.xhtml" media-type="application/xhtml+xml"/>'
    data = make_epub(
        {"c1.xhtml": page("<h1>Here</h1><p>Present text.</p>")}, spine=["c1", "ghost", "absent"]
    ).replace(b"</manifest>", absent + b"</manifest>")
    extracted = extract(data)
    assert extracted.text == "Here\n\nPresent text."
    assert extracted.warnings == ("2 spine documents missing or unreadable",)


def test_a_book_with_every_chapter_missing_is_empty() -> None:
    data = make_epub({}, spine=["ghost"])
    assert failure(data).reason is FailureReason.EMPTY


def test_encrypted_chapters_are_encrypted() -> None:
    encryption = (
        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        '<enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
        '<enc:CipherData><enc:CipherReference URI="OEBPS/c1.xhtml"/></enc:CipherData>'
        "</enc:EncryptedData></encryption>"
    )
    data = make_epub(
        {"c1.xhtml": "\x8f\x02 scrambled bytes \x00\x91"},
        extra={"META-INF/encryption.xml": encryption},
    )
    failed = failure(data)
    assert failed.reason is FailureReason.ENCRYPTED
    assert "DRM" in str(failed)


def test_obfuscated_fonts_are_not_encryption() -> None:
    encryption = (
        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        '<enc:EncryptionMethod Algorithm="http://www.idpf.org/2008/embedding"/>'
        '<enc:CipherData><enc:CipherReference URI="OEBPS/fonts/a.otf"/></enc:CipherData>'
        "</enc:EncryptedData></encryption>"
    )
    data = make_epub(
        {"c1.xhtml": page("<p>Readable.</p>")}, extra={"META-INF/encryption.xml": encryption}
    )
    assert extract(data).text == "Readable."


def test_a_binary_chapter_is_skipped() -> None:
    data = make_epub(
        {"bad.xhtml": bytes(range(256)).decode("latin-1") * 20, "c.xhtml": page("<p>Good.</p>")}
    )
    assert extract(data).text.endswith("Good.")


# -- the real books ------------------------------------------------------------------------------

CORPUS = {
    "ebooklib-test01.epub": ("Helou, this is my book!", ("About this book",)),
    "epubjs-alice.epub": ("filled with cupboards and book-shelves", ("Down The Rabbit-Hole",)),
    "epubjs-moby-dick.epub": ("Call me Ishmael", ("Chapter 1. Loomings.",)),
}


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_phrase_and_its_trail(shared_formats: Path, name: str) -> None:
    phrase, trail = CORPUS[name]
    extracted = extract((shared_formats / "epub" / name).read_bytes())
    assert phrase in extracted.text
    assert trail_of(extracted, phrase) == trail
    assert "Contents" not in [e.text for e in extracted.elements]


@pytest.mark.corpus
def test_corpus_alice_metadata_and_chapters(shared_formats: Path) -> None:
    extracted = extract((shared_formats / "epub" / "epubjs-alice.epub").read_bytes())
    assert extracted.title == "Alice's Adventures in Wonderland"
    assert extracted.metadata["author"] == "Lewis Carroll"
    assert extracted.metadata["rights"] == "Public domain in the USA."
    chapters = [text for level, text in headings(extracted) if level == 1]
    assert chapters[1:] == [
        "Down The Rabbit-Hole",
        "The Pool Of Tears",
        "A Caucus-Race And A Long Tale",
        "The Rabbit Sends In A Little Bill",
        "Advice From A Caterpillar",
        "Pig And Pepper",
        "A Mad Tea-Party",
        "The Queen's Croquet Ground",
        "Who Stole The Tarts?",
        "Alice's Evidence",
    ]


@pytest.mark.corpus
def test_corpus_moby_dick_is_whole_and_quick(shared_formats: Path) -> None:
    data = (shared_formats / "epub" / "epubjs-moby-dick.epub").read_bytes()
    started = time.perf_counter()
    extracted = extract(data)
    elapsed = time.perf_counter() - started
    assert elapsed < 5, f"{elapsed:.2f} s for Moby-Dick"  # measured ~0.2 s
    assert len(extracted.text) > 1_100_000
    assert extracted.title == "Moby-Dick"
    assert extracted.metadata["publisher"] == "Harper & Brothers, Publishers"
    chapters = [text for _, text in headings(extracted) if text.startswith("Chapter ")]
    assert len(chapters) == 135
    assert "Brief Contents" not in extracted.text  # the in-spine contents page
    assert extracted.text.index("Call me Ishmael") < extracted.text.index("Chapter 2.")


@pytest.mark.corpus
def test_corpus_moby_dick_in_the_sandbox(shared_formats: Path) -> None:
    data = (shared_formats / "epub" / "epubjs-moby-dick.epub").read_bytes()
    with ExtractionPool(ExtractSettings()) as pool:
        extracted = pool.extract(data, BOOK)
    assert "Call me Ishmael" in extracted.text
