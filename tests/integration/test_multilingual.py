"""Beyond English, end to end: German, Spanish and Chinese passages found by keyword in their
own language; a base whose embedder reads every language (a multilingual model behind the
HTTP embedder — here a stand-in server speaking the OpenAI ``/v1/embeddings`` protocol Ollama,
TEI, vLLM and llama.cpp serve) answers an English question from German passages, which the
keyword arm cannot; the bundled English model cannot, and the response says why."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import Settings
from small_base import write_files
from unit.stub_server import Recorder, Reply, running

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

MODEL = "stand-in-multilingual"
DIM = 32
# The stand-in's "understanding": words of several languages that mean one thing share a
# concept, and a text's vector is its concepts' (a bag of meanings, as a multilingual model's
# shared space holds translations together).
CONCEPTS = {
    "vacation": "leave",
    "holiday": "leave",
    "urlaub": "leave",
    "urlaubstage": "leave",
    "vacaciones": "leave",
    "days": "day",
    "tage": "day",
    "días": "day",
    "park": "car",
    "parking": "car",
    "parken": "car",
    "parkplatz": "car",
    "aparcamiento": "car",
}


def concept_vector(text: str) -> list[float]:
    vector = np.zeros(DIM, dtype=np.float64)
    for word in re.findall(r"\w+", text.lower()):
        concept = CONCEPTS.get(word)
        if concept is not None:
            vector[sum(concept.encode()) % DIM] += 1.0
    vector[-1] += 0.05  # never all zeros
    return list(vector / np.linalg.norm(vector))


class MultilingualServer(Recorder):
    def reply(self, request: dict[str, Any]) -> Reply:
        data = [
            {"index": i, "embedding": concept_vector(text)}
            for i, text in enumerate(request["input"])
        ]
        return Reply(body=json.dumps({"model": MODEL, "data": data}).encode())


HANDBUCH = {
    "urlaub.md": "# Urlaub\n\nJede Mitarbeiterin hat dreißig Urlaubstage im Jahr.\n",
    "parken.md": "# Parken\n\nDer Parkplatz hinter dem Haus ist für Besucher reserviert.\n",
    "kantine.md": "# Kantine\n\nDie Kantine öffnet um acht Uhr und schließt um vierzehn Uhr.\n",
}


@pytest.fixture
def multilingual(tmp_path: Path) -> Iterator[Lorebase]:
    with running(MultilingualServer()) as url:
        embedders = tmp_path / "embedders.toml"
        embedders.write_text(
            'default = "multi"\n'
            "[embedders.multi]\n"
            f'url = "{url}"\n'
            f'model = "{MODEL}"\n'
            f"dimensions = {DIM}\n"
            "no_answer_threshold = 0.3\n"
        )  # no ``languages``: the model reads every language
        settings = Settings.from_env(tmp_path / "data", {"LOREBASE_EMBEDDERS": str(embedders)})
        with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
            yield lb


def test_a_multilingual_embedder_answers_an_english_question_from_german_text(
    multilingual: Lorebase, tmp_path: Path
) -> None:
    lb = multilingual
    folder = write_files(tmp_path / "handbuch", HANDBUCH)
    lb.create_kb("handbuch", embedder="multi")
    lb.add([folder], kb="handbuch")
    assert lb.search("vacation days", kb="handbuch", mode="keyword").hits == []
    found = lb.search("vacation days", kb="handbuch")
    assert found.hits[0].provenance.path.endswith("urlaub.md")
    assert found.hits[0].provenance.language == "de"
    parking = lb.search("Where can I park?", kb="handbuch", mode="dense").hits
    assert parking[0].provenance.path.endswith("parken.md")


def test_each_language_is_found_by_keyword_in_its_own_words(tmp_path: Path) -> None:
    folder = write_files(
        tmp_path / "many",
        {
            **HANDBUCH,
            "vacaciones.md": "# Vacaciones\n\nCada empleada tiene treinta días de vacaciones.\n",
            "假期.md": "# 假期\n\n每位员工每年有三十天的带薪假期。\n",
        },
    )
    with open_lorebase(settings=Settings(data_dir=tmp_path / "data"), embedder=None) as lb:
        lb.add([folder], kb="many")
        languages = {d.path.rsplit("/", 1)[-1]: d for d in lb.documents("many")}
        assert set(languages) == {
            "urlaub.md",
            "parken.md",
            "kantine.md",
            "vacaciones.md",
            "假期.md",
        }

        def top(question: str) -> str:
            hits = lb.search(question, kb="many", mode="keyword").hits
            return hits[0].provenance.path.rsplit("/", 1)[-1] if hits else ""

        assert top("Wie viele Urlaubstage?") == "urlaub.md"
        assert top("Urlaubstag") == "urlaub.md"  # a German stem
        assert top("¿Cuántos días de vacación?") == "vacaciones.md"  # a Spanish stem
        assert top("带薪假期") == "假期.md"  # Chinese words, segmented
        assert top("薪") == "假期.md"  # one character of a word
        hit = lb.search("Parkplatz", kb="many", mode="keyword").hits[0]
        assert hit.provenance.language == "de"
        marked = [hit.snippet[a:b] for a, b in hit.highlights]
        assert marked == ["Parkplatz"]
        german = lb.search("Urlaub", kb="many", mode="keyword", language="de").hits
        assert {h.provenance.language for h in german} == {"de"}
