"""What a name people are shown may hold: a base's, an uploaded document's, a key's.

A name reaches screens — the web page, a terminal, an agent's context — that render what it
holds. A control character (NUL, an escape, a newline) breaks the line it is shown on or the
terminal showing it; a bidirectional override (U+202E) or isolate shows ``report‮fdp.exe`` as
``reportexe.pdf``; a zero-width space makes two names look the same. Every name is checked the
same way on the way in, wherever it comes from (HTTP, the command line, the library), and a
name that holds one is refused, saying which character and where: renaming is the user's call,
never a silent change. The joiners some scripts and emoji need (U+200C, U+200D) are kept.
"""

from __future__ import annotations

import unicodedata

from lorebase.errors import InvalidInput

# Categories never shown as themselves: controls, format characters (bidi overrides and
# isolates, zero-width spaces, the byte order mark), lone surrogates, line and paragraph
# separators.
_UNSHOWABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Format characters that writing needs: Persian and Indic scripts (ZWNJ), emoji sequences (ZWJ).
_JOINERS = frozenset({"\u200c", "\u200d"})


def unshowable(name: str) -> tuple[int, str] | None:
    """The first character of ``name`` that would not be shown as itself, with its position
    (None: every one is). Pure."""
    for position, char in enumerate(name):
        if char not in _JOINERS and unicodedata.category(char) in _UNSHOWABLE:
            return position, char
    return None


def checked_name(name: str, what: str) -> str:
    """``name``, or :class:`InvalidInput` naming the first character it must not hold (by code
    point, never the name itself: it may be what an attacker wants in a log)."""
    found = unshowable(name)
    if found is not None:
        position, char = found
        raise InvalidInput(
            f"a {what} must not contain control or formatting characters; character "
            f"{position + 1} is U+{ord(char):04X} ({unicodedata.name(char, 'a control character')})"
            "; rename it"
        )
    return name
