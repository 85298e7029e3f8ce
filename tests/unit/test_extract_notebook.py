"""Notebook extraction: every element stamped with its cell, markdown cells through the
Markdown reader (their headings open sections), code cells in the kernel's language with their
text outputs after them, and what a broken or bloated notebook does."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path, PurePath
from typing import Any

import pytest

from lorebase.chunk import chunk_document
from lorebase.errors import ExtractionFailed
from lorebase.extract.notebook import MAX_OUTPUT_CHARS, OUTPUT_LANGUAGE
from lorebase.extract.registry import extract_bytes
from lorebase.extract.sandbox import ExtractionPool
from lorebase.settings import MB, ChunkSettings, ExtractSettings
from lorebase.types import Extracted, FailureReason

NOTEBOOK = PurePath("analysis.ipynb")
KERNEL = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}
TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
    "\x1b[0;32m<ipython-input-1>\x1b[0m in \x1b[0;36m<module>\x1b[0;34m\x1b[0m\n"
    "\x1b[1;32m----> 1\x1b[0m\x1b[0;36m1\x1b[0m\x1b[0;34m/\x1b[0m\x1b[0;36m0\x1b[0m",
    "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
]


def markdown(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source.splitlines(keepends=True)}


def code(source: str, *outputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": list(outputs),
        "source": source,
    }


def stream(text: str, name: str = "stdout") -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text}


def result(data: dict[str, Any], kind: str = "execute_result") -> dict[str, Any]:
    return {"output_type": kind, "data": data, "metadata": {}}


def notebook(*cells: dict[str, Any], metadata: dict[str, Any] | None = None) -> bytes:
    document = {
        "cells": list(cells),
        "metadata": KERNEL if metadata is None else metadata,
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document).encode()


def extract(data: bytes, settings: ExtractSettings | None = None) -> Extracted:
    extracted = extract_bytes(data, NOTEBOOK, settings or ExtractSettings())
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
        assert element.page is not None and element.line is None
    return extracted


def failure(data: bytes) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data)
    return caught.value


def cited(extracted: Extracted, phrase: str) -> tuple[tuple[str, ...], int | None]:
    """(trail, first cell) of the chunk holding ``phrase``: what its citation shows."""
    for chunk in chunk_document(extracted, ChunkSettings()):
        if phrase in chunk.text:
            return chunk.position.trail, chunk.position.page
    raise AssertionError(f"{phrase!r} is in no chunk")


def rows(extracted: Extracted) -> list[tuple[int | None, str, str | None, str]]:
    return [(e.page, e.kind.value, e.language, e.text) for e in extracted.elements]


# -- reading -------------------------------------------------------------------------------------


def test_cells_in_order_each_with_its_number() -> None:
    data = notebook(
        markdown("# Sales Report\n\nQuarterly numbers."),
        markdown("## Loading\n\n- first\n- second"),
        code("import pandas as pd\ndf = pd.read_csv('q3.csv')"),
        markdown(""),
        code("print(len(df))", stream("1204\n")),
        {"cell_type": "raw", "metadata": {}, "source": "raw words"},
    )
    extracted = extract(data)
    assert rows(extracted) == [
        (1, "heading", None, "Sales Report"),
        (1, "paragraph", None, "Quarterly numbers."),
        (2, "heading", None, "Loading"),
        (2, "list_item", None, "first"),
        (2, "list_item", None, "second"),
        (3, "code", "python", "import pandas as pd\ndf = pd.read_csv('q3.csv')"),
        (5, "code", "python", "print(len(df))"),
        (5, "code", OUTPUT_LANGUAGE, "1204"),
        (6, "paragraph", None, "raw words"),
    ]
    assert extracted.title == "Sales Report"
    assert extracted.kind == "ipynb"
    assert dict(extracted.metadata) == {
        "kernel": "Python 3 (ipykernel)",
        "language": "python",
        "nbformat": "4.5",
    }


def test_code_cells_sit_under_the_heading_before_them() -> None:
    data = notebook(
        markdown("# Report"),
        markdown("## Cleaning the data"),
        markdown("We drop empty rows."),
        code("df = df.dropna()  # remove holes"),
        markdown("## Plotting"),
        code("df.plot()"),
    )
    extracted = extract(data)
    assert cited(extracted, "remove holes") == (("Report", "Cleaning the data"), 3)
    assert cited(extracted, "df.plot()") == (("Report", "Plotting"), 6)


def test_outputs_text_kept_images_and_scripts_left_out() -> None:
    image = result(
        {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"},
        kind="display_data",
    )
    data = notebook(
        code(
            "run()",
            stream("step one\n"),
            stream("a warning\n", name="stderr"),
            result({"text/plain": "42"}),
            image,
            result({"application/javascript": "alert(1)", "text/plain": "<IPython.Javascript>"}),
            result({"text/html": "<table><tr><td>html cell</td></tr></table><script>x()</script>"}),
            result({"text/markdown": "**bold** words", "text/plain": "<Markdown object>"}),
            {
                "output_type": "error",
                "ename": "ZeroDivisionError",
                "evalue": "x",
                "traceback": TRACEBACK,
            },
        )
    )
    extracted = extract(data)
    outputs = [text for _, _, language, text in rows(extracted) if language == OUTPUT_LANGUAGE]
    assert outputs[:4] == ["step one\na warning", "42", "html cell", "**bold** words"]
    assert outputs[4].startswith("---------")
    assert outputs[4].endswith("ZeroDivisionError: division by zero")
    assert "\x1b" not in extracted.text and "[0;31m" not in extracted.text
    assert "Figure size" not in extracted.text and "alert" not in extracted.text
    assert "x()" not in extracted.text


def test_progress_bars_keep_their_last_state() -> None:
    data = notebook(code("train()", stream("epoch 1: 10%\repoch 1: 50%\repoch 1: 100%\r\ndone\n")))
    assert rows(extract(data))[-1][3] == "epoch 1: 100%\ndone"


def test_a_long_output_is_cut() -> None:
    data = notebook(code("dump()", stream(("x" * 80 + "\n") * 1000)))
    extracted = extract(data)
    output = extracted.elements[-1].text
    assert len(output) <= MAX_OUTPUT_CHARS + 2 and output.endswith("…")
    assert extracted.warnings == (f"1 outputs cut at {MAX_OUTPUT_CHARS} characters",)


def test_language_from_language_info_and_cell_magics() -> None:
    data = notebook(
        code("x <- 1"),
        code("%%bash\necho hi"),
        code("%%script perl\nprint 1;"),
        code("%timeit x"),
        metadata={"language_info": {"name": "R"}},
    )
    assert [e.language for e in extract(data).elements] == ["r", "shell", "perl", "r"]


def test_fenced_code_in_markdown_keeps_its_language() -> None:
    data = notebook(markdown("Run this:\n\n```bash\npip install lorebase\n```"))
    assert rows(extract(data))[1] == (1, "code", "bash", "pip install lorebase")


def test_title_falls_back_to_notebook_metadata() -> None:
    data = notebook(markdown("## Only a subheading"), metadata={**KERNEL, "title": "Meta Title"})
    assert extract(data).title == "Meta Title"


def test_nbformat_3_worksheets() -> None:
    document = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": "old"},
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": 1, "source": ["Old Style"]},
                    {"cell_type": "markdown", "source": ["Some *prose*."]},
                    {
                        "cell_type": "code",
                        "language": "python",
                        "input": ["1 + 1"],
                        "outputs": [
                            {"output_type": "pyout", "text": ["2"], "prompt_number": 1},
                            {"output_type": "display_data", "png": "iVBOR", "text": ["<fig>"]},
                            {
                                "output_type": "pyerr",
                                "ename": "E",
                                "evalue": "v",
                                "traceback": ["\x1b[31mE: v\x1b[0m"],
                            },
                        ],
                    },
                ]
            }
        ],
    }
    extracted = extract(json.dumps(document).encode())
    assert rows(extracted) == [
        (1, "heading", None, "Old Style"),
        (2, "paragraph", None, "Some prose."),
        (3, "code", "python", "1 + 1"),
        (3, "code", OUTPUT_LANGUAGE, "2"),
        (3, "code", OUTPUT_LANGUAGE, "E: v"),
    ]
    assert extracted.title == "Old Style"


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"cells": [ {"cell_type": "markdown", "source": "cut off',
        b"\x89PNG\r\n\x1a\n not json",
        b'{"cells": []}'.replace(b"{", b"\xff{"),
        b"[1, 2, 3]",
        b'{"metadata": {}, "nbformat": 4}',
        b'{"cells": "not a list"}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["truncated", "binary", "not-utf8", "a-list", "no-cells", "cells-not-a-list", "deep"],
)
def test_not_a_notebook_is_corrupt(data: bytes) -> None:
    assert failure(data).reason is FailureReason.CORRUPT


def test_an_empty_notebook_is_empty() -> None:
    assert failure(notebook()).reason is FailureReason.EMPTY
    assert failure(notebook(markdown("   "), code(""))).reason is FailureReason.EMPTY


def _bloated() -> bytes:
    """A notebook whose one output is a 50 MB base64 PNG."""
    picture = base64.b64encode(bytes(range(256)) * (150 * 1024)).decode()[: 50 * MB]
    return notebook(
        markdown("# Figures"),
        code("plot()", result({"image/png": picture, "text/plain": "<Figure>"}, "display_data")),
        markdown("The figure shows growth."),
    )


def test_a_50_mb_image_output_is_skipped_quickly() -> None:
    data = _bloated()
    assert len(data) > 50 * MB
    started = time.monotonic()
    extracted = extract(data)
    assert time.monotonic() - started < 5
    assert extracted.text == "Figures\n\nplot()\n\nThe figure shows growth."


def test_a_50_mb_image_output_in_the_sandbox() -> None:
    with ExtractionPool(ExtractSettings()) as pool:
        extracted = pool.extract(_bloated(), NOTEBOOK)
    assert "The figure shows growth." in extracted.text


# -- the real notebooks --------------------------------------------------------------------------


@pytest.mark.corpus
def test_corpus_running_code(shared_formats: Path) -> None:
    path = shared_formats / "ipynb" / "jupyter-running-code.ipynb"
    extracted = extract(path.read_bytes())
    phrase = "Jupyter Notebook is an interactive environment"
    assert phrase in extracted.text
    assert cited(extracted, phrase) == (("Running Code",), 2)
    assert extracted.title == "Running Code"
    trail, cell = cited(extracted, 'print("hi, stderr", file=sys.stderr)')
    assert trail == ("Running Code", "sys.stdout and sys.stderr") and cell is not None
    stderr = next(e for e in extracted.elements if e.text == "hi, stderr")
    assert stderr.page == 20 and stderr.language == OUTPUT_LANGUAGE


@pytest.mark.corpus
def test_corpus_beyond_plain_python(shared_formats: Path) -> None:
    path = shared_formats / "ipynb" / "ipython-beyond-plain-python.ipynb"
    extracted = extract(path.read_bytes())
    assert "IPython: beyond plain Python" in extracted.text
    assert extracted.title == "IPython: beyond plain Python"
    assert "\x1b" not in extracted.text and "[0;31m" not in extracted.text
    assert "[0;" not in extracted.text
    traceback = next(
        e for e in extracted.elements if e.page == 62 and e.language == OUTPUT_LANGUAGE
    )
    assert traceback.text.endswith("ZeroDivisionError: float division by zero")
    assert cited(extracted, "mod.g(0)")[0][-1] == "Running normal Python code: execution and errors"
    assert "iVBOR" not in extracted.text  # the one plot is left out
    assert not any(e.page == 80 and e.language == OUTPUT_LANGUAGE for e in extracted.elements)
