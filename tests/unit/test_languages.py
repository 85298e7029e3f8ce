"""The question's language against the languages a model reads: the pure rule, and the
detector on real texts (py3langid's model ships in its wheel: no download)."""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.languages import CONFIDENT, LESS_LIKELY, Detected, LanguageDetector, readable


def detected(language: str, confidence: float, **others: float) -> Detected:
    return Detected(language, confidence, {language: confidence, **others})


def test_a_model_reads_its_languages_and_is_sure_of_nothing_else() -> None:
    assert readable(detected("en", 0.9), {"en"})
    assert readable(detected("de", 0.9), None)  # every language
    assert not readable(detected("de", 0.9, en=0.001), {"en"})
    # Unsure, or no language at all: read (an identifier, a code, a name).
    assert readable(detected("de", CONFIDENT - 0.01), {"en"})
    assert readable(detected("zxx", 0.9), {"en"})
    # Another language first, but English not far behind: read.
    assert readable(detected("pcm", 0.6, en=0.6 / LESS_LIKELY), {"en"})
    assert not readable(detected("pcm", 0.6, en=0.6 / LESS_LIKELY / 2), {"en"})


@given(
    st.sampled_from(["en", "de", "zh", "zxx"]),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_more_belief_in_a_readable_language_never_makes_a_text_unreadable(
    language: str, confidence: float, english: float
) -> None:
    low = Detected(language, confidence, {language: confidence, "en": english / 2})
    high = Detected(language, confidence, {language: confidence, "en": english})
    if readable(low, {"en"}):
        assert readable(high, {"en"})


@pytest.fixture(scope="module")
def detector() -> LanguageDetector:
    return LanguageDetector()


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("How many vacation days carry over to the next year?", "en"),
        ("Wie viele Urlaubstage werden ins nächste Jahr übertragen?", "de"),
        ("¿Cuántos días de vacaciones se pasan al año siguiente?", "es"),
        ("黑豹队的防守在第50届超级碗中表现如何？", "zh"),
    ],
)
def test_the_detector_names_the_language_of_a_question(
    detector: LanguageDetector, text: str, language: str
) -> None:
    found = detector.detect(text)
    assert found.language == language and found.confidence > CONFIDENT
    english_only = frozenset({"en"})
    assert readable(found, english_only) == (language == "en")


@pytest.mark.parametrize("text", ["kubectl get pods", "ERR_4711", "PDF", "RRF k", "the", "42"])
def test_identifiers_and_codes_are_read_by_an_english_model(
    detector: LanguageDetector, text: str
) -> None:
    assert readable(detector.detect(text), {"en"})


def test_the_model_is_unpacked_once_into_the_cache_and_read_from_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The first process writes the unpacked model; later ones read it (a damaged copy: the
    packed model answers, with a warning naming no text, and the copy is written again).
    Loaded once a process, the model is the same whichever copy it came from."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    from lorebase import languages

    question = "Wie viele Einwohner hat die Stadt Berlin heute?"
    packed = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True).rank(question)[:3]
    folder = tmp_path / "models"
    first = languages._from_unpacked(LanguageIdentifier, MODEL_DIR / MODEL_FILE, folder)
    written = list(folder.glob("langid-*.npz"))
    assert len(written) == 1 and written[0].stat().st_size > 1_000_000
    assert not list(folder.glob(".*partial"))
    again = languages._load(folder)  # read from the copy
    # Its large tables are mapped from the file, not read: a server's processes share them.
    assert isinstance(again.nb_ptc, np.memmap) and isinstance(again.tk_nextmove, memoryview)
    for identifier in (first, again):
        ranked = identifier.rank(question)[:3]
        assert [lang for lang, _ in ranked] == [lang for lang, _ in packed]
        assert [p for _, p in ranked] == pytest.approx([p for _, p in packed])
    (folder / written[0].name).write_bytes(b"")  # cut short by a power loss: EOFError
    with caplog.at_level(logging.WARNING, logger="lorebase.languages"):
        assert languages._load(folder).rank(question)[0][0] == "de"
    languages._from_unpacked(LanguageIdentifier, MODEL_DIR / MODEL_FILE, folder)
    (folder / written[0].name).write_bytes(b"not a model")
    with caplog.at_level(logging.WARNING, logger="lorebase.languages"):
        fallback = languages._load(folder)
    assert fallback.rank(question)[0][0] == "de"
    assert "could not be used" in caplog.text and "Berlin" not in caplog.text
    assert not (folder / written[0].name).exists()  # the next process writes it again
    assert LanguageDetector(folder).detect(question).language == "de"


def test_an_unpacked_copy_that_cannot_be_mapped_is_not_used(tmp_path: Path) -> None:
    """Only an uncompressed archive of plain arrays whole to its last byte is mapped: a
    compressed one, one holding objects, or one cut inside an array raises, and the model is
    read from the package instead (:func:`test_the_model_is_unpacked_once...`)."""
    from lorebase import languages

    table = np.arange(1000, dtype=np.uint32)
    np.savez(tmp_path / "plain.npz", table=table, small=np.array([1.5], dtype=np.float32))
    mapped = languages._mapped(tmp_path / "plain.npz")
    assert isinstance(mapped["table"], np.memmap) and list(mapped["table"][-2:]) == [998, 999]
    assert mapped["small"].tolist() == [1.5]
    np.savez_compressed(tmp_path / "packed.npz", table=table)
    np.savez(tmp_path / "objects.npz", table=np.array([{"a": 1}], dtype=object))
    whole = (tmp_path / "plain.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(whole[: len(whole) // 2])
    middle = whole.index(table[500:].tobytes())  # an array's bytes gone, the directory kept
    (tmp_path / "hollow.npz").write_bytes(whole[:middle] + whole[-200:])
    for name in ("packed.npz", "objects.npz", "cut.npz", "hollow.npz"):
        with pytest.raises((ValueError, OSError, zipfile.BadZipFile)):
            languages._mapped(tmp_path / name)
