import codecs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.errors import ExtractionFailed
from lorebase.extract.encoding import declared_charset, decode
from lorebase.types import FailureReason

SAMPLE = "Ça coûte 5 €. «Naïve» façade — Grüße, Øresund, 東京, Привет\n"
RUSSIAN = (
    "Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены "
    "разумом и совестью и должны поступать в отношении друг друга в духе братства.\n"
) * 3
FRENCH = (
    "Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont doués "
    "de raison et de conscience et doivent agir les uns envers les autres dans un esprit de "
    "fraternité. « Déjà vu », dit-il, à côté de la forêt où l'été était très chaud.\n"
) * 3


@pytest.mark.parametrize(
    ("bom", "codec"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
    ],
)
def test_bom_decides_the_encoding(bom: bytes, codec: str) -> None:
    decoded = decode(bom + SAMPLE.encode(codec))
    assert decoded.text == SAMPLE
    assert decoded.encoding == codecs.lookup(codec).name


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom_is_not_read_as_utf8_with_nuls(codec: str) -> None:
    text = "Plain English text in a wide encoding.\nSecond line here.\n" * 4
    decoded = decode(text.encode(codec))
    assert decoded.text == text
    assert "\x00" not in decoded.text


def test_utf8_is_taken_before_any_detector() -> None:
    assert decode(SAMPLE.encode("utf-8")).encoding == "utf-8"


def test_cp1252_bytes_decode_to_windows_characters() -> None:
    text = "Smart “quotes” and an ellipsis… and a dash – in a café.\n" * 3
    decoded = decode(text.encode("cp1252"))
    assert decoded.text == text


def test_latin1_text_decodes_to_the_right_accents() -> None:
    decoded = decode(FRENCH.encode("latin-1"))
    assert decoded.text == FRENCH


def test_koi8r_text_is_detected() -> None:
    decoded = decode(RUSSIAN.encode("koi8-r"))
    assert decoded.text == RUSSIAN
    assert decoded.encoding == "koi8-r"


def test_declared_charset_in_html_meta_wins_over_detection() -> None:
    html = '<html><head><meta charset="windows-1251"></head><body>Привет мир</body></html>'
    decoded = decode(html.encode("cp1251"), markup=True)
    assert "Привет мир" in decoded.text
    assert decoded.encoding == "cp1251"


def test_iso_8859_1_label_means_windows_1252_like_browsers() -> None:
    assert (
        declared_charset(
            b'<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
        )
        == "cp1252"
    )
    decoded = decode(b'<meta charset="iso-8859-1"><p>\x93quoted\x94</p>', markup=True)
    assert "“quoted”" in decoded.text


def test_xml_declaration_is_honoured() -> None:
    data = '<?xml version="1.0" encoding="koi8-r"?><doc>Привет</doc>'.encode("koi8-r")
    assert "Привет" in decode(data, markup=True).text


def test_a_lying_declaration_falls_through_to_detection() -> None:
    data = '<meta charset="utf-8"><p>caf\xe9 cr\xe8me</p>'.encode("latin-1")
    assert "café crème" in decode(data, markup=True).text


def test_unknown_declared_charset_is_ignored() -> None:
    assert declared_charset(b'<meta charset="no-such-codec">') is None


def test_binary_content_is_corrupt() -> None:
    with pytest.raises(ExtractionFailed) as caught:
        decode(bytes(range(256)) * 20)
    assert caught.value.reason is FailureReason.CORRUPT


def test_line_ends_are_unified() -> None:
    assert decode(b"a\r\nb\rc\n").text == "a\nb\nc\n"


TEXT = st.text(
    alphabet=st.one_of(
        st.characters(blacklist_categories=("Cc", "Cs")),
        st.sampled_from("\t\n\r"),
    )
)


@given(TEXT)
def test_any_utf8_text_round_trips(text: str) -> None:
    expected = text.replace("\r\n", "\n").replace("\r", "\n")
    if expected.startswith("\ufeff"):
        expected = expected[1:]
    assert decode(text.encode("utf-8")).text == expected


@given(TEXT)
def test_any_text_decodes_without_error_in_any_single_byte_codec(text: str) -> None:
    data = text.encode("cp1252", errors="ignore") + text.encode("koi8-r", errors="ignore")
    assert isinstance(decode(data).text, str)
