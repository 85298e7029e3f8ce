"""Mail (.eml) and mailboxes (.mbox): headers as searchable text, bodies (plain preferred,
HTML read as HTML, charsets, flowed text, quotes), attachments as parts read by their own
format within the bounds of lorebase.extract.parts, and the ways a mail fails."""

from __future__ import annotations

import base64
import time
from email.message import EmailMessage
from pathlib import Path, PurePath

import docx
import pytest

from lorebase.errors import ExtractionFailed
from lorebase.extract.mail import split_mbox
from lorebase.extract.mail_text import decode_words, unflow
from lorebase.extract.parts import MAX_NAME_CHARS, PartCollector, UniqueNames, clean_name
from lorebase.extract.registry import extract_bytes
from lorebase.extract.sandbox import ExtractionPool
from lorebase.names import unshowable
from lorebase.settings import MB, ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason, Part
from unit.fixtures_office import docx_bytes, text_pdf, zip_bomb_docx

SETTINGS = ExtractSettings()
EML = PurePath("mail.eml")
MBOX = PurePath("list.mbox")


def extract(data: bytes, settings: ExtractSettings = SETTINGS, path: PurePath = EML) -> Extracted:
    extracted = extract_bytes(data, path, settings)
    assert_invariants(extracted)
    return extracted


def failure(
    data: bytes, settings: ExtractSettings = SETTINGS, path: PurePath = EML
) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, settings, path)
    return caught.value


def assert_invariants(extracted: Extracted) -> None:
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
    for part in extracted.parts:
        assert part.name and len(part.name) <= MAX_NAME_CHARS
        assert "/" not in part.name and "\\" not in part.name and " › " not in part.name
        assert unshowable(part.name) is None
        assert (part.extracted is None) == (part.reason is not None)
        if part.extracted is not None:
            assert_invariants(part.extracted)
    names = [part.name.casefold() for part in extracted.parts]
    assert len(names) == len(set(names))


def part(extracted: Extracted, name: str) -> Part:
    found = [p for p in extracted.parts if p.name == name]
    assert found, f"no part {name!r} among {[p.name for p in extracted.parts]}"
    return found[0]


def mail(body: str = "Hello team,\n\nthe budget is approved.", **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = headers.get("sender", "Alice Example <alice@example.com>")
    message["To"] = headers.get("to", "Bob <bob@example.com>, carol@example.com")
    if "cc" in headers:
        message["Cc"] = headers["cc"]
    message["Date"] = headers.get("date", "Tue, 10 May 2005 11:26:39 -0600")
    message["Subject"] = headers.get("subject", "Budget 2025")
    message["Message-ID"] = "<m1@example.com>"
    message["In-Reply-To"] = "<m0@example.com>"
    message.set_content(body)
    return message


def kinds(extracted: Extracted) -> list[tuple[str, str]]:
    return [(e.kind.value, e.text) for e in extracted.elements]


# --- the real files ---------------------------------------------------------------------------

REAL_PHRASES = {
    "eml/mail-attachment-message-rfc822.eml": "This is the first part",
    "eml/mail-html-only-8bit.eml": "Holiday Gift Ideas for the Computer Professional",
    "eml/mail-multipart-alternative-7bit.eml": "log in to the Account Center",
}


@pytest.mark.parametrize("name", sorted(REAL_PHRASES))
def test_each_real_mail_says_its_phrase(shared_formats: Path, name: str) -> None:
    extracted = extract((shared_formats / name).read_bytes())
    assert extracted.kind == "eml"
    assert REAL_PHRASES[name] in extracted.text


def test_the_attached_message_is_a_part_and_its_broken_pdf_is_corrupt(shared_formats: Path) -> None:
    data = (shared_formats / "eml/mail-attachment-message-rfc822.eml").read_bytes()
    extracted = extract(data)
    assert extracted.title == "testing"
    assert extracted.metadata["from"] == "foo@example.com"
    assert extracted.metadata["to"] == ("blah@example.com",)
    assert extracted.metadata["date"] == "2005-06-06T22:21:22+02:00"
    forwarded = part(extracted, "Another PDF.eml")
    assert forwarded.extracted is not None and forwarded.extracted.kind == "eml"
    assert "Just attaching another PDF" in forwarded.extracted.text
    assert "Just attaching" not in extracted.text  # in its own document, not the outer one
    assert forwarded.extracted.metadata["to"] == ("xxxx@xxxx.com", "xxxx@xxxx.com")
    broken = part(forwarded.extracted, "broken.pdf")
    assert broken.reason is FailureReason.CORRUPT and broken.extracted is None
    assert broken.size == 1026
    assert extracted.text.endswith("Attachments: Another PDF.eml")


def test_an_html_only_newsletter_with_an_invalid_encoding_is_read_as_html(
    shared_formats: Path,
) -> None:
    extracted = extract((shared_formats / "eml/mail-html-only-8bit.eml").read_bytes())
    assert extracted.title == "The Original Advantage #e13011"
    assert ElementKind.TABLE in {e.kind for e in extracted.elements}
    assert "<td" not in extracted.text and "A:visited" not in extracted.text  # markup, style
    assert extracted.metadata["date"] == "2001-12-04T17:11:25-04:59"


def test_the_plain_alternative_is_preferred_mojibake_and_all(shared_formats: Path) -> None:
    data = (shared_formats / "eml/mail-multipart-alternative-7bit.eml").read_bytes()
    extracted = extract(data)
    assert "DISCOVERÃ" in extracted.text  # in the plain part's bytes as sent
    assert "<http://discover.qrs1.net/" in extracted.text  # the plain part's link style
    assert extracted.elements[0].kind is ElementKind.HEADING
    assert extracted.elements[0].text == "Discover(R) Card News Online - January 2002"


def test_the_pipermail_archive_is_four_messages_as_written(shared_formats: Path) -> None:
    data = (shared_formats / "mbox/perceval-pipermail-2015-november.mbox").read_bytes()
    extracted = extract(data, path=MBOX)
    assert extracted.kind == "mbox" and extracted.metadata["messages"] == "4"
    subject = "[Metrics-grimoire] Docker and MetricsGrimoire"
    assert [p.name for p in extracted.parts] == [
        subject,
        f"{subject} (2)",
        f"{subject} (3)",
        f"{subject} (4)",
    ]
    items = [e.text for e in extracted.elements if e.kind is ElementKind.LIST_ITEM]
    assert len(items) == 4
    assert items[0] == f"2015-11-14 21:29 · andy at example.com (Andy Grunwald) · {subject}"
    first = part(extracted, subject).extracted
    assert first is not None and first.kind == "eml"
    assert "you might have heard of Docker" in first.text
    assert first.metadata["from"] == "andy at example.com (Andy Grunwald)"
    reply = part(extracted, f"{subject} (2)").extracted
    assert reply is not None
    assert reply.metadata["in_reply_to"] == (
        "<CACRHdMaObu7Dc0FWTWEesvRCzUNDG=7oA7KFqAgtOs_UKjb3Og@example.com>"
    )
    quoted = [e.text for e in reply.elements if e.text.startswith("> Hey,")]
    assert quoted, "the quoted reply is kept as a paragraph of its own"


def test_the_eclipse_mailbox_is_two_messages(shared_formats: Path) -> None:
    data = (shared_formats / "mbox/perceval-mbox-multipart.mbox").read_bytes()
    extracted = extract(data, path=MBOX)
    assert len(extracted.parts) == 2
    second = part(extracted, "[platform-dev] Removing standard menus and toolbar icons")
    assert second.extracted is not None
    assert "I am fairly new to eclipse" in second.extracted.text
    assert "<html" not in second.extracted.text.lower()  # the plain alternative


def test_parts_cross_the_worker_boundary(shared_formats: Path) -> None:
    data = (shared_formats / "eml/mail-attachment-message-rfc822.eml").read_bytes()
    with ExtractionPool(ExtractSettings(workers=1)) as pool:
        extracted = pool.extract(data, EML)
    assert extracted == extract(data)
    forwarded = part(extracted, "Another PDF.eml").extracted
    assert forwarded is not None
    assert part(forwarded, "broken.pdf").reason is FailureReason.CORRUPT


# --- headers ----------------------------------------------------------------------------------


def test_headers_are_searchable_text_and_metadata() -> None:
    message = mail(cc="Dan <dan@example.com>")
    extracted = extract(message.as_bytes())
    assert kinds(extracted)[:2] == [
        ("heading", "Budget 2025"),
        (
            "paragraph",
            "From: Alice Example <alice@example.com>\n"
            "To: Bob <bob@example.com>, carol@example.com\n"
            "Cc: Dan <dan@example.com>\n"
            "Date: Tue, 10 May 2005 11:26:39 -0600",
        ),
    ]
    assert extracted.title == "Budget 2025"
    assert dict(extracted.metadata) == {
        "from": "Alice Example <alice@example.com>",
        "to": ("Bob <bob@example.com>", "carol@example.com"),
        "cc": ("Dan <dan@example.com>",),
        "date": "2005-05-10T11:26:39-06:00",
        "subject": "Budget 2025",
        "message_id": "<m1@example.com>",
        "in_reply_to": "<m0@example.com>",
    }


def test_encoded_words_in_odd_charsets_are_decoded() -> None:
    japanese = "=?iso-2022-jp?B?" + base64.b64encode("日本語".encode("iso-2022-jp")).decode() + "?="
    russian = "=?koi8-r?B?" + base64.b64encode("Привет".encode("koi8-r")).decode() + "?="
    split = "=?utf-8?B?w6k=?= =?utf-8?Q?t=C3?= =?utf-8?Q?=A9?="  # é, t and é split in two
    raw = (
        f"From: {japanese} <x@example.jp>\r\n"
        f"To: {russian} <y@example.ru>\r\n"
        f"Subject: {split} and =?x-unknown-charset?Q?caf=E9?= in =?gb2312?B?1tDOxA==?=\r\n"
        "Content-Type: text/plain\r\n\r\nbody\r\n"
    ).encode()
    extracted = extract(raw)
    assert extracted.title == "été and café in 中文"
    assert extracted.metadata["to"] == ("Привет <y@example.ru>",)
    assert extracted.metadata["from"] == "日本語 <x@example.jp>"


def test_decode_words_keeps_what_it_cannot_decode() -> None:
    assert decode_words("plain text") == "plain text"
    assert decode_words("=?utf-8?B?not base64!?=") == "=?utf-8?B?not base64!?="
    assert decode_words("a =?utf-8?Q?b?= c") == "a b c"
    assert decode_words("=?utf-8?Q?a?= =?utf-8?Q?b?=") == "ab"  # RFC 2047: the space goes


def test_broken_headers_and_raw_8bit_headers_do_not_stop_the_mail() -> None:
    raw = (
        b"From: Ren\xc3\xa9e <renee@example.com>\r\n"
        b"Subject: R\xe9sum\xe9 attached\r\n"  # Latin-1 bytes, undeclared
        b"Date: not a date at all\r\n"
        b"X-Broken header without a colon\r\n"
        b"To: \r\n"
        b"\r\n"
        b"The body.\r\n"
    )
    extracted = extract(raw)
    assert extracted.metadata["from"] == "Renée <renee@example.com>"
    assert "date" not in extracted.metadata  # unparseable: kept as text only
    assert "Date: not a date at all" in extracted.text
    assert "The body." in extracted.text
    assert extracted.title == "Résumé attached"


def test_control_characters_never_reach_the_title_or_metadata() -> None:
    raw = (
        b"Subject: Alert\x1b[2J =?utf-8?Q?now=00?=\x07\r\nFrom: a\x00b@example.com\r\n\r\nbody\r\n"
    )
    extracted = extract(raw)
    assert extracted.title == "Alert[2J now"
    assert extracted.metadata["from"] == "ab@example.com"


# --- bodies -----------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["8bits", "7-bit", "x-made-up"])
def test_an_invalid_transfer_encoding_leaves_the_bytes_as_they_are(encoding: str) -> None:
    raw = (
        f"Subject: s\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Transfer-Encoding: {encoding}\r\n\r\n"
    ).encode() + "Grüße aus Köln".encode()
    assert "Grüße aus Köln" in extract(raw).text


def test_a_wrong_charset_falls_back_to_detection() -> None:
    body = "Ceci est un résumé des décisions prises à la réunion de lundi.".encode("cp1252")
    raw = b"Subject: s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body
    assert "résumé des décisions" in extract(raw).text
    undeclared = b"Subject: s\r\nContent-Type: text/plain; charset=bogus-charset\r\n\r\n" + body
    assert "résumé des décisions" in extract(undeclared).text


def test_iso_8859_1_is_read_as_windows_1252() -> None:
    raw = (
        b"Subject: s\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\nit\x92s \x93quoted\x94"
    )
    assert "it’s “quoted”" in extract(raw).text


def test_html_only_bodies_keep_their_structure_under_the_subject() -> None:
    message = EmailMessage()
    message["Subject"] = "Release notes"
    message.set_content(
        "<html><body><h1>Version 2</h1><p>Faster indexing.</p>"
        "<table><tr><th>Item</th><th>Change</th></tr><tr><td>ingest</td><td>2x</td></tr></table>"
        "</body></html>",
        subtype="html",
    )
    extracted = extract(message.as_bytes())
    assert ("heading", "Version 2") in kinds(extracted)
    assert [e.level for e in extracted.elements if e.kind is ElementKind.HEADING] == [1, 2]
    assert ("table", "Item | Change\ningest | 2x") in kinds(extracted)


def test_plain_is_preferred_unless_it_is_empty() -> None:
    message = mail("The plain words.")
    message.add_alternative("<p>The HTML words.</p>", subtype="html")
    text = extract(message.as_bytes()).text
    assert "The plain words." in text and "HTML words" not in text
    empty_plain = mail(" \n")
    empty_plain.add_alternative("<p>The HTML words.</p>", subtype="html")
    assert "The HTML words." in extract(empty_plain.as_bytes()).text


def test_quoted_replies_are_paragraphs_of_their_own() -> None:
    body = "Sounds good.\nOn Monday Bob wrote:\n> Shall we meet?\n> At noon?\nSee you."
    paragraphs = [t for k, t in kinds(extract(mail(body).as_bytes())) if k == "paragraph"][1:]
    assert paragraphs == [
        "Sounds good.\nOn Monday Bob wrote:",
        "> Shall we meet?\n> At noon?",
        "See you.",
    ]


def test_flowed_text_is_joined() -> None:
    assert unflow("one long \nline\n\nnext", delsp=False) == "one long line\n\nnext"
    assert unflow("split wo \nrd", delsp=True) == "split word"
    assert unflow("> quoted \n> more\nplain", delsp=False) == "> quoted more\nplain"
    assert unflow("-- \nsig", delsp=False) == "-- \nsig"
    raw = (
        b"Subject: s\r\nContent-Type: text/plain; format=flowed; delsp=yes\r\n\r\n"
        b"This paragraph was wrap \r\nped by the sender.\r\n"
    )
    assert "This paragraph was wrapped by the sender." in extract(raw).text


def test_a_body_part_of_binary_bytes_is_left_out_with_a_warning() -> None:
    raw = (
        b"Subject: s\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n"
        b"--B\r\nContent-Type: text/plain\r\n\r\nReadable words.\r\n"
        b"--B\r\nContent-Type: text/plain\r\n\r\n" + bytes(range(1, 9)) * 100 + b"\r\n--B--\r\n"
    )
    extracted = extract(raw)
    assert "Readable words." in extracted.text
    assert extracted.warnings == ("body_unreadable:1",)


def test_a_ten_megabyte_single_line_body_is_read_in_time() -> None:
    line = ("lorem ipsum dolor sit amet " * 400_000)[: 10 * MB]
    started = time.perf_counter()
    extracted = extract(mail(line).as_bytes())
    elapsed = time.perf_counter() - started
    assert max(len(e.text) for e in extracted.elements) >= 10 * MB - 10
    assert elapsed < 20


# --- attachments ------------------------------------------------------------------------------


def with_attachments(*files: tuple[str | None, bytes, str], body: str = "See attached.") -> bytes:
    message = mail(body)
    for name, data, mime in files:
        maintype, subtype = mime.split("/")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return message.as_bytes()


def test_attachments_are_documents_read_by_their_own_format() -> None:
    document = docx.Document()
    document.add_paragraph("Minutes of the steering committee")
    data = with_attachments(
        ("report.pdf", text_pdf([["Quarterly revenue grew by nine percent"]]), "application/pdf"),
        ("minutes.docx", docx_bytes(document), "application/octet-stream"),
        ("setup.exe", b"MZ\x90\x00binary", "application/octet-stream"),
        ("report.pdf", text_pdf([["A second report"]]), "application/pdf"),
    )
    extracted = extract(data)
    assert [p.name for p in extracted.parts] == [
        "report.pdf",
        "minutes.docx",
        "setup.exe",
        "report (2).pdf",
    ]
    report = part(extracted, "report.pdf").extracted
    assert report is not None and report.kind == "pdf"
    assert "Quarterly revenue grew" in report.text
    minutes = part(extracted, "minutes.docx").extracted
    assert minutes is not None and "steering committee" in minutes.text
    assert part(extracted, "setup.exe").reason is FailureReason.UNSUPPORTED_FORMAT
    assert "Quarterly revenue" not in extracted.text
    assert extracted.text.endswith(
        "Attachments: report.pdf, minutes.docx, setup.exe, report (2).pdf"
    )


def test_an_unnamed_attachment_is_named_by_its_type_and_read_by_it() -> None:
    data = with_attachments(
        (None, b"a,b\n1,2\n", "text/csv"), (None, b"%PDF-junk", "application/pdf")
    )
    extracted = extract(data)
    assert [p.name for p in extracted.parts] == ["attachment 1.csv", "attachment 2.pdf"]
    table = part(extracted, "attachment 1.csv").extracted
    assert table is not None and table.elements[0].kind is ElementKind.TABLE
    assert part(extracted, "attachment 2.pdf").reason is FailureReason.CORRUPT


def test_a_named_attachment_without_a_known_extension_is_read_by_its_type() -> None:
    data = with_attachments(("README", b"Install with make.", "text/plain"))
    readme = part(extract(data), "README").extracted
    assert readme is not None and "Install with make." in readme.text


def test_attachment_names_in_every_spelling_are_decoded() -> None:
    parts = [
        b"Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9%20v2.txt",
        b'Content-Disposition: attachment; filename="=?utf-8?B?w6R0c2NoLnR4dA==?="',
        b'Content-Disposition: attachment; filename="na\xc3\xafve.txt"',
        b"Content-Disposition: attachment;\r\n filename*0*=utf-8''long%20name%20;\r\n"
        b' filename*1="in two pieces.txt"',
    ]
    raw = (
        b"Subject: names\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n"
        + b"".join(
            b"--B\r\nContent-Type: text/plain\r\n" + header + b"\r\n\r\nx\r\n" for header in parts
        )
        + b"--B--\r\n"
    )
    names = [p.name for p in extract(raw).parts]
    assert names == ["résumé v2.txt", "ätsch.txt", "naïve.txt", "long name in two pieces.txt"]


def test_hostile_attachment_names_are_cleaned() -> None:
    data = with_attachments(
        ("../../etc/passwd", b"x", "text/plain"),
        ("invoice\u202eexe.pdf", b"y", "text/plain"),
        ("a › b.txt", b"z", "text/plain"),
        ("bell\x07\x1b[2J.txt", b"w", "text/plain"),
        ("x" * 300 + ".txt", b"v", "text/plain"),
        ("..", b"u", "text/plain"),
    )
    names = [p.name for p in extract(data).parts]
    assert names[:4] == [".._.._etc_passwd", "invoiceexe.pdf", "a - b.txt", "bell[2J.txt"]
    assert len(names[4]) == MAX_NAME_CHARS and names[4].endswith("x.txt")
    assert names[5] == "attachment 6.txt"


def test_clean_name_and_unique_names() -> None:
    assert clean_name(None, 3, "application/pdf") == "attachment 3.pdf"
    assert clean_name("  \t ", 1, None) == "attachment 1"
    assert clean_name("zero\u200bwidth.txt", 1) == "zerowidth.txt"
    assert clean_name("فارسی\u200cنامه.txt", 1) == "فارسی\u200cنامه.txt"  # ZWNJ kept
    names = UniqueNames()
    claimed = [names.claim(n) for n in ("a.pdf", "A.pdf", "a.pdf", "a (2).pdf", "b")]
    assert claimed == ["a.pdf", "A (2).pdf", "a (3).pdf", "a (2) (2).pdf", "b"]
    assert [names.claim("Version 2.0") for _ in range(2)] == ["Version 2.0", "Version 2.0 (2)"]
    long = "y" * MAX_NAME_CHARS
    assert names.claim(long) == long
    again = names.claim(long)
    assert len(again) == MAX_NAME_CHARS and again.endswith(" (2)")


def test_inline_images_the_html_shows_are_not_attachments() -> None:
    message = mail("Plain version.")
    message.add_alternative('<p>Logo: <img src="cid:logo123@example"></p>', subtype="html")
    html = list(message.iter_parts())[1]
    assert isinstance(html, EmailMessage)
    html.add_related(b"\x89PNG fake", maintype="image", subtype="png", cid="<logo123@example>")
    message.add_attachment(b"real attachment", maintype="text", subtype="plain", filename="a.txt")
    extracted = extract(message.as_bytes())
    assert [p.name for p in extracted.parts] == ["a.txt"]


def test_a_thousand_attachments_are_bounded_with_a_warning() -> None:
    data = with_attachments(
        *((f"note{i}.txt", f"note {i}".encode(), "text/plain") for i in range(1000))
    )
    extracted = extract(data)
    assert len(extracted.parts) == SETTINGS.max_parts
    assert extracted.parts[-1].name == f"note{SETTINGS.max_parts - 1}.txt"
    assert extracted.warnings == (f"parts_left_out:{1000 - SETTINGS.max_parts}",)
    small = extract(data, ExtractSettings(max_parts=3))
    assert [p.name for p in small.parts] == ["note0.txt", "note1.txt", "note2.txt"]
    assert small.warnings == ("parts_left_out:997",)


def nested_mail(depth: int) -> bytes:
    """A mail carrying a mail carrying a mail ... ``depth`` levels, the last with a note."""
    inner = mail(f"level {depth}", subject=f"level {depth}")
    inner.add_attachment(b"the deepest note", maintype="text", subtype="plain", filename="deep.txt")
    for level in range(depth - 1, -1, -1):
        outer = mail(f"level {level}", subject=f"level {level}")
        outer.add_attachment(inner)
        inner = outer
    return inner.as_bytes()


def test_nesting_deeper_than_max_part_depth_is_not_read() -> None:
    extracted = extract(nested_mail(4), ExtractSettings(max_part_depth=2))
    level1 = part(extracted, "level 1.eml").extracted
    assert level1 is not None
    level2 = part(level1, "level 2.eml").extracted
    assert level2 is not None and "level 2" in level2.text
    too_deep = part(level2, "level 3.eml")
    assert too_deep.extracted is None and too_deep.reason is FailureReason.TOO_LARGE
    assert too_deep.size > 0
    assert extract(nested_mail(1), ExtractSettings(max_part_depth=0)).parts[0].reason is (
        FailureReason.TOO_LARGE
    )


def test_a_zip_bomb_attachment_fails_alone() -> None:
    bomb = zip_bomb_docx(docx_bytes(docx.Document()), 4 * MB)
    data = with_attachments(("bomb.docx", bomb, "application/octet-stream"))
    extracted = extract(data, ExtractSettings(max_expanded_bytes=2 * MB))
    assert part(extracted, "bomb.docx").reason is FailureReason.TOO_LARGE
    assert "See attached." in extracted.text


def test_a_broken_base64_attachment_is_corrupt_and_the_mail_fine() -> None:
    pdf = base64.b64encode(text_pdf([["never seen"]]))[:300] + b"!!not*base64"
    raw = (
        b"Subject: broken\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n"
        b"--B\r\nContent-Type: text/plain\r\n\r\nThe body survives.\r\n"
        b"--B\r\nContent-Type: application/pdf; name=x.pdf\r\nContent-Transfer-Encoding: base64\r\n"
        b"Content-Disposition: attachment; filename=x.pdf\r\n\r\n" + pdf + b"\r\n--B--\r\n"
    )
    extracted = extract(raw)
    assert "The body survives." in extracted.text
    assert part(extracted, "x.pdf").reason is FailureReason.CORRUPT


def test_the_bytes_of_parts_are_bounded_per_container() -> None:
    collector = PartCollector(ExtractSettings(max_file_bytes=100))
    collector.add("a.txt", b"a" * 60)
    collector.add("b.txt", b"b" * 60)
    first, second = collector.parts()
    assert first.extracted is not None
    assert second.reason is FailureReason.TOO_LARGE and second.size == 60


# --- empty and odd mails ----------------------------------------------------------------------


def test_a_mail_with_no_body_and_no_subject_is_empty() -> None:
    raw = b"From: a@example.com\r\nTo: b@example.com\r\n\r\n\r\n"
    assert failure(raw).reason is FailureReason.EMPTY


def test_an_empty_mail_with_a_readable_attachment_is_not_empty() -> None:
    message = EmailMessage()
    message["From"] = "a@example.com"
    message.add_attachment(
        b"the attached words", maintype="text", subtype="plain", filename="n.txt"
    )
    extracted = extract(message.as_bytes())
    assert part(extracted, "n.txt").extracted is not None
    assert extracted.text.endswith("Attachments: n.txt")


def test_a_mail_with_only_unreadable_attachments_and_no_text_is_empty() -> None:
    message = EmailMessage()
    message.add_attachment(b"MZ", maintype="application", subtype="octet-stream", filename="x.exe")
    assert failure(message.as_bytes()).reason is FailureReason.EMPTY


def test_a_subject_alone_is_a_mail() -> None:
    extracted = extract(b"Subject: Lunch moved to Friday\r\n\r\n")
    assert kinds(extracted) == [("heading", "Lunch moved to Friday")]


def test_deep_multipart_nesting_is_cut_not_crashed() -> None:
    depth = 200
    head = b"".join(
        b"--B%d\r\nContent-Type: multipart/mixed; boundary=B%d\r\n\r\n" % (i, i + 1)
        for i in range(depth)
    )
    tail = b"".join(b"--B%d--\r\n" % i for i in range(depth, -1, -1))
    raw = (
        b"Subject: deep\r\nContent-Type: multipart/mixed; boundary=B0\r\n\r\n"
        + head
        + b"--B%d\r\nContent-Type: text/plain\r\n\r\ndeep text\r\n" % depth
        + tail
    )
    extracted = extract(raw)
    assert extracted.title == "deep"


# --- mailboxes --------------------------------------------------------------------------------


def test_split_mbox_at_from_lines_only() -> None:
    data = (
        b"From alice@example.com Mon Jan  1 10:00:00 2024\n"
        b"Subject: one\n\nFrom the desk of Alice: hello.\n>From here on, escaped.\n\n"
        b"From bob@example.com Tue Jan  2 11:00:00 2024\n"
        b"Subject: two\n\nsecond\n"
    )
    first, second = split_mbox(data)
    assert b"From the desk of Alice" in first and b"\nFrom here on, escaped." in first
    assert second.startswith(b"Subject: two")
    assert split_mbox(b"Subject: no From line\n\nbody\n") == [b"Subject: no From line\n\nbody\n"]
    assert split_mbox(b"\n\n") == []


def test_a_mailbox_names_its_messages_and_bounds_them() -> None:
    messages = [
        b"From x@example.com Mon Jan  1 10:00:00 2024\nSubject: Weekly %d\n\nbody %d\n\n" % (i, i)
        for i in range(5)
    ]
    messages.append(
        b"From y@example.com Mon Jan  1 10:00:00 2024\nFrom: y@example.com\n\nno subject\n"
    )
    data = b"".join(messages)
    extracted = extract(data, ExtractSettings(max_parts=4), MBOX)
    assert [p.name for p in extracted.parts] == ["Weekly 0", "Weekly 1", "Weekly 2", "Weekly 3"]
    assert extracted.warnings == ("parts_left_out:2",)
    items = [e.text for e in extracted.elements if e.kind is ElementKind.LIST_ITEM]
    assert items[-2:] == ["Weekly 4", "y@example.com"]  # the index lists every message
    unbounded = extract(data, SETTINGS, MBOX)
    assert unbounded.parts[-1].name == "message 6"


def test_an_empty_mailbox_is_empty() -> None:
    assert failure(b"\n\n\n", path=MBOX).reason is FailureReason.EMPTY
    assert failure(b"From x Mon Jan  1 10:00:00 2024\n\n", path=MBOX).reason is FailureReason.EMPTY
