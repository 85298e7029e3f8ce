"""Extraction in bounded worker processes: bombs the pattern guard misses come out as
``too_large`` or ``timeout``, the parent's memory stays put, and the rest of a pass goes on."""

from __future__ import annotations

import io
import os
import resource
import signal
import sys
import threading
import time
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from pathlib import Path, PurePath
from typing import Any

import pytest

from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import ExtractionFailed, InvalidInput
from lorebase.extract.pdf import check_expansion
from lorebase.extract.registry import extract_bytes
from lorebase.extract.sandbox import (
    _ELEMENT_FIELDS,
    _EXTRACTED_FIELDS,
    ExtractionPool,
    pack,
    unpack,
)
from lorebase.inspect import inspect_file, inspect_folder
from lorebase.settings import MB, ExtractSettings, Settings
from lorebase.store.states import DocumentState
from lorebase.types import DocumentKind, Element, ElementKind, Extracted, FailureReason, Part
from proc_state import process_state
from waiting import wait_until

# Low limits keep the bombs cheap: a worker holds ~55 MB before it reads anything.
LOW = ExtractSettings(max_memory_bytes=256 * MB, max_seconds=5)
GOOD_MD = b"# Notes\n\nThe quick brown fox jumps over the lazy dog.\n"


def _deflated_zeros(size: int) -> bytes:
    deflater = zlib.compressobj(9)
    block = bytes(MB)
    parts = [deflater.compress(block) for _ in range(size // MB)]
    return b"".join([*parts, deflater.flush()])


def _pdf(stream: bytes, stream_dict: bytes) -> bytes:
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d %s >>\nstream\n%s\nendstream" % (len(stream), stream_dict, stream),
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@pytest.fixture(scope="module")
def pdf_bomb() -> bytes:
    """~2 KB: a content stream deflated twice, its filters spelled ``/Fl`` and
    ``/#46lateDecode`` and its dictionary claiming to be an image, expanding to 512 MB."""
    stream = zlib.compress(_deflated_zeros(512 * MB), 9)
    return _pdf(stream, b"/Filter [/Fl /#46lateDecode] /Subtype /Image")


def _docx(paragraphs: int) -> bytes:
    """A valid DOCX whose document.xml holds ``paragraphs`` paragraphs (~130 bytes each)."""
    paragraph = b"<w:p><w:r><w:t>" + b"lorem ipsum dolor sit amet " * 4 + b"</w:t></w:r></w:p>"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"><Default Extension="rels" ContentType="application/vnd.'
            'openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType='
            '"application/xml"/><Override PartName="/word/document.xml" ContentType="application'
            '/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr(
            "_rels/.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
            '2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org'
            '/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
            "</Relationships>",
        )
        with archive.open("word/document.xml", "w") as part:
            part.write(
                b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
                b'wordprocessingml/2006/main"><w:body>'
            )
            block = paragraph * 1000
            for _ in range(paragraphs // 1000):
                part.write(block)
            part.write(b"</w:body></w:document>")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def docx_bomb() -> bytes:
    """~100 MB of document XML in a ~0.4 MB file."""
    return _docx(800_000)


def _failure(pool: ExtractionPool, data: bytes, name: str) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        pool.extract(data, PurePath(name))
    return caught.value


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.mark.slow
def test_pdf_bomb_the_pattern_guard_misses_is_too_large_in_the_worker(pdf_bomb: bytes) -> None:
    assert len(pdf_bomb) < 4096
    check_expansion(pdf_bomb, 64 * MB)  # the spelling walks around the scan...
    peak = _peak_rss()
    with ExtractionPool(LOW) as pool:
        failure = _failure(pool, pdf_bomb, "bomb.pdf")
        assert failure.reason is FailureReason.TOO_LARGE  # ...the worker's bound does not
        assert pool.extract(GOOD_MD, PurePath("after.md")).title == "Notes"
    assert _peak_rss() - peak < 64 * MB


def test_docx_with_100_mb_of_xml_is_too_large(docx_bomb: bytes) -> None:
    peak = _peak_rss()
    started = time.monotonic()
    with ExtractionPool(LOW) as pool:
        assert _failure(pool, docx_bomb, "bomb.docx").reason is FailureReason.TOO_LARGE
    assert time.monotonic() - started < 30
    assert _peak_rss() - peak < 64 * MB


@pytest.mark.slow
def test_a_file_over_the_cpu_limit_is_a_timeout(docx_bomb: bytes) -> None:
    settings = ExtractSettings(max_memory_bytes=2048 * MB, max_seconds=1)
    with ExtractionPool(settings) as pool:
        failure = _failure(pool, docx_bomb, "slow.docx")
        assert failure.reason is FailureReason.TIMEOUT
        assert "timeout" in str(failure)
        assert pool.extract(GOOD_MD, PurePath("next.md")).title == "Notes"


def test_an_extraction_over_the_result_limit_is_too_large() -> None:
    settings = ExtractSettings(max_result_bytes=2000)
    with ExtractionPool(settings) as pool:
        assert pool.extract(GOOD_MD, PurePath("small.md")).title == "Notes"
        big = b"# Big\n\n" + b"many words in a paragraph\n\n" * 200
        assert _failure(pool, big, "big.md").reason is FailureReason.TOO_LARGE


def test_a_file_the_worker_cannot_even_hold_is_too_large() -> None:
    settings = ExtractSettings(max_memory_bytes=128 * MB, max_file_bytes=256 * MB, workers=1)
    with ExtractionPool(settings) as pool:
        failure = _failure(pool, b"x" * (100 * MB), "huge.txt")
        assert failure.reason is FailureReason.TOO_LARGE
        assert pool.extract(GOOD_MD, PurePath("next.md")).title == "Notes"


def test_a_worker_killed_mid_job_is_replaced_and_the_next_file_is_fine(docx_bomb: bytes) -> None:
    with ExtractionPool(ExtractSettings(max_memory_bytes=2048 * MB, workers=1)) as pool:
        pool.extract(GOOD_MD, PurePath("warm.md"))
        (pid,) = pool.worker_pids()
        outcome: list[BaseException] = []

        def slow() -> None:
            try:
                pool.extract(docx_bomb, PurePath("slow.docx"))
            except ExtractionFailed as failure:
                outcome.append(failure)

        job = threading.Thread(target=slow)
        job.start()
        wait_until(lambda: not pool.worker_pids(), what="the worker taken for the job")
        os.kill(pid, signal.SIGKILL)
        job.join(30)
        assert len(outcome) == 1
        assert isinstance(outcome[0], ExtractionFailed)
        assert outcome[0].reason is FailureReason.TOO_LARGE
        assert pool.extract(GOOD_MD, PurePath("next.md")).title == "Notes"
        assert pool.worker_pids() != [pid]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_killed_while_idle_is_reaped_at_once_and_replaced(workers: int) -> None:
    """No zombie waits for the next file (issue 27): the pool reaps a killed idle worker by
    itself, the other idle workers stay, and the next file starts a new one."""
    with ExtractionPool(ExtractSettings(workers=workers)) as pool:
        with ThreadPoolExecutor(workers) as threads:  # warm every worker
            list(threads.map(lambda i: pool.extract(GOOD_MD, PurePath(f"{i}.md")), range(8)))
        pids = pool.worker_pids()
        os.kill(pids[0], signal.SIGKILL)
        wait_until(lambda: process_state(pids[0]) is None, 20, what="the killed worker reaped")
        assert pool.worker_pids() == pids[1:]
        assert pool.extract(GOOD_MD, PurePath("again.md")).title == "Notes"
        assert pids[0] not in pool.worker_pids()


def test_workers_are_reused_shared_between_threads_and_stopped_on_close() -> None:
    pool = ExtractionPool(ExtractSettings(workers=2))
    with ThreadPoolExecutor(4) as threads:
        titles = list(
            threads.map(lambda i: pool.extract(GOOD_MD, PurePath(f"{i}.md")).title, range(12))
        )
    assert titles == ["Notes"] * 12
    pids = pool.worker_pids()
    assert 1 <= len(pids) <= 2
    pool.close()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists()
    with pytest.raises(RuntimeError):
        pool.extract(GOOD_MD, PurePath("late.md"))


def test_failures_keep_their_reason_and_unsupported_needs_no_worker() -> None:
    with ExtractionPool(ExtractSettings()) as pool:
        assert _failure(pool, b"   \n", "blank.txt").reason is FailureReason.EMPTY
        assert _failure(pool, b"%PDF-1.4 broken", "x.pdf").reason is FailureReason.CORRUPT
        assert _failure(pool, b"data", "x.exe").reason is FailureReason.UNSUPPORTED_FORMAT
        assert pool.worker_pids() != []


@pytest.mark.slow
def test_a_pass_indexes_the_other_documents_next_to_bombs(
    tmp_path: Path, pdf_bomb: bytes, docx_bomb: bytes
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bomb.pdf").write_bytes(pdf_bomb)
    (folder / "bomb.docx").write_bytes(docx_bomb)
    (folder / "notes.md").write_bytes(GOOD_MD)
    (folder / "plain.txt").write_bytes(b"A plain text file about foxes and dogs.\n")
    settings = Settings(data_dir=tmp_path / "data", extract=LOW)
    # Warm: what the first pass of a process imports and loads is not the bombs' doing.
    warm = tmp_path / "warm"
    warm.mkdir()
    (warm / "plain.txt").write_bytes(b"Warm up.\n")
    with open_lorebase(settings=Settings(data_dir=tmp_path / "w"), embedder=FakeEmbedder()) as lb:
        lb.add([warm])
        lb.search("warm", kb="default")
    peak = _peak_rss()
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        report = lb.add([folder])
        assert sorted(report.failed) == [
            ("docs/bomb.docx", "too_large"),
            ("docs/bomb.pdf", "too_large"),
        ]
        documents = {d.path: d for d in lb.documents("default")}
        assert documents["docs/notes.md"].state is DocumentState.INDEXED
        assert documents["docs/plain.txt"].state is DocumentState.INDEXED
        assert documents["docs/bomb.pdf"].reason == "too_large"
        assert lb.search("foxes", kb="default").hits
    assert _peak_rss() - peak < 64 * MB


@pytest.mark.slow
def test_lorebase_extract_goes_through_the_workers(tmp_path: Path, pdf_bomb: bytes) -> None:
    (tmp_path / "bomb.pdf").write_bytes(pdf_bomb)
    (tmp_path / "notes.md").write_bytes(GOOD_MD)
    report = inspect_file(tmp_path / "bomb.pdf", Path("bomb.pdf"), LOW)
    assert report.failure is not None and report.failure.reason is FailureReason.TOO_LARGE
    reports = {r.path.name: r for r in inspect_folder(tmp_path, LOW)}
    assert reports["notes.md"].ok
    assert reports["bomb.pdf"].failure is not None


@pytest.mark.parametrize(
    "fields",
    [{"workers": 0}, {"max_memory_bytes": 64 * MB}, {"max_seconds": 0}, {"max_result_bytes": 0}],
)
def test_limits_are_validated(fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        ExtractSettings(**fields)


def test_an_extraction_crosses_the_process_boundary_unchanged() -> None:
    assert tuple(f.name for f in fields(Element)) == _ELEMENT_FIELDS  # pack knows every field
    assert tuple(f.name for f in fields(Extracted)) == _EXTRACTED_FIELDS
    text = "Title\n\ndef f(): pass\n"
    extracted = Extracted(
        kind=DocumentKind.CODE,
        title="Title",
        elements=(
            Element(ElementKind.HEADING, "Title", 0, 5, level=1, line=1, page=2),
            Element(ElementKind.CODE, "def f():", 7, 20, line=3, language="python", symbol="f"),
        ),
        text=text,
        content_hash="abc",
        encoding="utf-8",
        language="python",
        page_count=3,
        warnings=("pages_without_text:1",),
    )
    assert unpack(pack(extracted)) == extracted
    scanned = Extracted(
        kind="png",
        title=None,
        elements=(Element(ElementKind.PARAGRAPH, "Read", 0, 4, page=1, boxes=((0, 0.1, 1, 0.2),)),),
        text="Read",
        content_hash="def",
    )
    mail = Extracted(
        kind="eml",
        title="Hello",
        elements=(Element(ElementKind.PARAGRAPH, "Hi", 0, 2),),
        text="Hi",
        content_hash="ghi",
        metadata={"from": "ann@example.org", "to": ("bo@example.org", "cy@example.org")},
        parts=(
            Part("scan.png", 10, "def", scanned),
            Part("broken.pdf", 3, "jkl", None, FailureReason.CORRUPT),
            Part("inner.eml", 2, "ghi", extracted),
        ),
    )
    assert unpack(pack(mail)) == mail
    with ExtractionPool(ExtractSettings()) as pool:
        data = Path(__file__).read_bytes()
        assert pool.extract(data, PurePath("x.py")) == extract_bytes(
            data, PurePath("x.py"), ExtractSettings()
        )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread")
@pytest.mark.parametrize("lowered", [True, False])
def test_a_server_s_workers_read_files_at_a_lower_priority(lowered: bool) -> None:
    """A server's extraction workers lower their own CPU priority (lorebase.priority: reading
    a big PDF yields the processor to its searches); a command's keep the caller's."""
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    if mine >= 19:
        pytest.skip("the tests already run at the lowest priority")
    with ExtractionPool(ExtractSettings(workers=1, lowered=lowered)) as pool:
        assert pool.extract(GOOD_MD, PurePath("a.md")).title == "Notes"
        (pid,) = pool.worker_pids()
        assert (os.getpriority(os.PRIO_PROCESS, pid) > mine) is lowered
