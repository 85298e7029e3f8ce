from pathlib import PurePath

import pytest

from lorebase.extract import extract_bytes
from lorebase.settings import ExtractSettings
from lorebase.types import DocumentKind, ElementKind, Extracted

SETTINGS = ExtractSettings()


def extract(source: str, name: str) -> Extracted:
    return extract_bytes(source.encode(), PurePath(name), SETTINGS)


def blocks(extracted: Extracted) -> list[tuple[int | None, str | None]]:
    return [(e.line, e.symbol) for e in extracted.elements]


PYTHON = '''"""Module doc."""
import os

LIMIT = 3


# helper comment
@decorator
def helper(a):
    return a


class Thing:
    def method(self):
        pass
'''


def test_python_blocks_follow_top_level_definitions() -> None:
    extracted = extract(PYTHON, "mod.py")
    assert extracted.kind is DocumentKind.CODE
    assert extracted.language == "python"
    assert blocks(extracted) == [(1, None), (7, "helper"), (13, "Thing")]
    assert extracted.elements[1].text.startswith("# helper comment\n@decorator\ndef helper")
    assert all(e.kind is ElementKind.CODE and e.language == "python" for e in extracted.elements)
    assert extracted.elements[2].text.endswith("        pass")  # indentation kept


def test_python_with_a_syntax_error_is_still_read() -> None:
    extracted = extract("def broken(:\n    pass\n\n\nx = 1\n", "bad.py")
    assert "def broken" in extracted.text


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        (
            "main.go",
            "package main\n\n// Greet says hi.\nfunc Greet(n string) string {\n\treturn n\n}\n\n"
            "type Server struct {\n\tport int\n}\n\nfunc (s *Server) Start() error {\n"
            "\treturn nil\n}\n",
            [(1, None), (3, "Greet"), (8, "Server"), (12, "Start")],
        ),
        (
            "lib.rs",
            "use std::io;\n\n/// A point.\npub struct Point { x: i32 }\n\n"
            "impl Display for Point {\n    fn fmt(&self) {}\n}\n\npub(crate) async fn run() {}\n",
            [(1, None), (3, "Point"), (6, "Point"), (10, "run")],
        ),
        (
            "app.ts",
            'import x from "y";\n\nexport interface Opts { a: number }\n\n'
            "export async function load(o: Opts) {\n  return;\n}\n\n"
            "export const handler = async (req) => {\n  return 1;\n};\n",
            [(1, None), (3, "Opts"), (5, "load"), (9, "handler")],
        ),
        (
            "x.c",
            "#include <stdio.h>\n\n/* add two */\nint add(int a, int b)\n{\n    return a + b;\n}\n"
            "\nint main(void) {\n    if (x) {}\n    return 0;\n}\n",
            [(1, None), (3, "add"), (9, "main")],
        ),
        (
            "schema.sql",
            "-- users\nCREATE TABLE IF NOT EXISTS users (id int);\n\n"
            "create or replace view active as select 1;\n",
            [(1, "users"), (4, "active")],
        ),
    ],
)
def test_other_languages_are_cut_at_definitions(
    name: str, source: str, expected: list[tuple[int, str | None]]
) -> None:
    assert blocks(extract(source, name)) == expected


def test_code_without_definitions_is_cut_at_blank_line_runs() -> None:
    extracted = extract("echo one\n\n\necho two\n", "run.sh")
    assert [(e.line, e.text) for e in extracted.elements] == [(1, "echo one"), (4, "echo two")]


def test_offsets_hold_for_code() -> None:
    extracted = extract(PYTHON, "mod.py")
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
