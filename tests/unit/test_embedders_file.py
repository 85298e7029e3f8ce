"""The embedders file (TOML): what it gives, which file is read, and every mistake named with
the file, the embedder, the key and the fix, never a value."""

from __future__ import annotations

from pathlib import Path

import pytest

from lorebase.errors import InvalidInput, Unavailable
from lorebase.settings import Settings
from lorebase.settings.embedders import EmbedderConfig
from lorebase.settings.embedders_file import load_embedders

KEY = "sk-very-secret-key-4242"
FULL = """
default = "nomic"

[embedders.nomic]
kind = "http"
url = "http://127.0.0.1:11434/v1"
model = "nomic-embed-text"
dimensions = 768
truncate = 256
query_prefix = "search_query: "
document_prefix = "search_document: "
api_key_env = "NOMIC_API_KEY"
timeout = 60
batch_size = 16
no_answer_threshold = 0.45

[embedders.tiny]
kind = "fake"
dimensions = 8

[embedders.bundled]
quantize = false
no_answer_threshold = 0.3
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "embedders.toml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> str:
    path = write(tmp_path, text)
    with pytest.raises(InvalidInput) as info:
        load_embedders(path, environ or {})
    message = str(info.value)
    assert str(path) in message
    assert KEY not in message
    return message


def test_a_full_file(tmp_path: Path) -> None:
    configs, default = load_embedders(write(tmp_path, FULL), {"NOMIC_API_KEY": KEY})
    assert default == "nomic"
    by_name = {c.name: c for c in configs}
    assert by_name["nomic"] == EmbedderConfig(
        "nomic",
        kind="http",
        url="http://127.0.0.1:11434/v1",
        model="nomic-embed-text",
        dimensions=768,
        truncate=256,
        query_prefix="search_query: ",
        document_prefix="search_document: ",
        api_key=KEY,
        timeout=60.0,
        batch_size=16,
        no_answer_threshold=0.45,
    )
    assert isinstance(by_name["nomic"].timeout, float)
    assert by_name["tiny"] == EmbedderConfig("tiny", kind="fake", dimensions=8)
    assert by_name["bundled"] == EmbedderConfig(
        "bundled", kind="bundled", quantize=False, no_answer_threshold=0.3
    )
    assert KEY not in repr(by_name["nomic"])


def test_kind_defaults_to_http_and_api_key_may_be_written(tmp_path: Path) -> None:
    text = '[embedders.x]\nurl = "http://h:1/v1"\nmodel = "m"\napi_key = "k"\n'
    (config,), default = load_embedders(write(tmp_path, text), {})
    assert (config.kind, config.api_key, default) == ("http", "k", None)


def test_an_empty_file_names_nothing(tmp_path: Path) -> None:
    assert load_embedders(write(tmp_path, ""), {}) == ((), None)


def test_syntax_error(tmp_path: Path) -> None:
    message = refused(tmp_path, f'[embedders.x]\napi_key = "{KEY}\n')
    assert "not valid TOML" in message and "line 2" in message


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    message = refused(tmp_path, '[embedders.x]\nurl = "http://h/v1"\nmodel = "m"\ndimension = 3\n')
    assert "embedder 'x'" in message and "'dimension'" in message
    assert "did you mean 'dimensions'" in message


def test_unknown_top_level_key(tmp_path: Path) -> None:
    message = refused(tmp_path, 'defualt = "x"\n')
    assert "'defualt'" in message and "did you mean 'default'" in message


@pytest.mark.parametrize(
    ("line", "key", "fix"),
    [
        ('dimensions = "768"', "dimensions", "dimensions = 768"),
        ("dimensions = 7.5", "dimensions", "dimensions = 768"),
        ("dimensions = true", "dimensions", "dimensions = 768"),
        ("timeout = true", "timeout", "timeout = 60"),
        ("url = 3", "url", 'url = "http://127.0.0.1:11434/v1"'),
        (f'api_key = ["{KEY}"]', "api_key", "api_key_env"),
        ('no_answer_threshold = "high"', "no_answer_threshold", "no_answer_threshold = 0.45"),
    ],
)
def test_wrong_types_name_the_key_and_the_fix(
    tmp_path: Path, line: str, key: str, fix: str
) -> None:
    message = refused(tmp_path, f'[embedders.x]\nmodel = "m"\n{line}\n')
    assert "embedder 'x'" in message and f"key {key!r}" in message and fix in message


def test_a_missing_key_variable_leaves_that_embedder_saying_so(tmp_path: Path) -> None:
    """Not every command fails where the variable is unset: that embedder does not answer and
    names the variable (never a key); the others work."""
    from lorebase.embed.registry import Embedders

    text = (
        '[embedders.x]\nurl = "http://h/v1"\nmodel = "m"\napi_key_env = "X_KEY"\n'
        '[embedders.y]\nkind = "fake"\ndimensions = 4\n'
    )
    path = tmp_path / "embedders.toml"
    path.write_text(text)
    configs, _ = load_embedders(path, {"OTHER": KEY})
    x = next(c for c in configs if c.name == "x")
    assert (x.api_key, x.missing_key) == (None, "X_KEY")
    embedders = Embedders(configs, tmp_path)
    reach = embedders.reachability("x")
    assert not reach.reachable and "X_KEY" in (reach.detail or "") and KEY not in str(reach)
    with pytest.raises(Unavailable, match="X_KEY"):
        embedders.get("x")
    assert embedders.get("y") is not None


def test_both_key_forms_are_refused(tmp_path: Path) -> None:
    text = f'[embedders.x]\nurl = "h"\nmodel = "m"\napi_key = "{KEY}"\napi_key_env = "K"\n'
    message = refused(tmp_path, text, {"K": KEY})
    assert "remove api_key" in message


def test_bundled_takes_only_its_two_keys(tmp_path: Path) -> None:
    message = refused(tmp_path, '[embedders.bundled]\nmodel = "other"\n')
    assert "key 'model'" in message and "quantize and no_answer_threshold" in message
    message = refused(tmp_path, '[embedders.bundled]\nkind = "http"\n')
    assert "key 'kind'" in message


def test_quantize_is_only_for_the_bundled_model(tmp_path: Path) -> None:
    message = refused(tmp_path, '[embedders.x]\nurl = "h"\nmodel = "m"\nquantize = false\n')
    assert "key 'quantize'" in message


def test_the_configurations_own_checks_name_the_file(tmp_path: Path) -> None:
    message = refused(tmp_path, '[embedders.x]\nkind = "http"\nmodel = "m"\n')
    assert "embedder x" in message and "url" in message
    assert "lower-case" in refused(tmp_path, '[embedders.Nomic]\nkind = "fake"\ndimensions = 4\n')
    assert "truncate" in refused(
        tmp_path, '[embedders.x]\nkind = "fake"\ndimensions = 4\ntruncate = 8\n'
    )


def test_default_must_name_an_embedder(tmp_path: Path) -> None:
    message = refused(tmp_path, 'default = "nope"\n[embedders.x]\nkind = "fake"\ndimensions = 4\n')
    assert "'nope'" in message and "bundled, x" in message
    assert load_embedders(write(tmp_path, 'default = "bundled"\n'), {}) == ((), "bundled")


def test_an_embedder_must_be_a_table(tmp_path: Path) -> None:
    assert "must be a table" in refused(tmp_path, "[embedders]\nx = 3\n")


# -- which file Settings.from_env reads ---------------------------------------------------


def test_settings_read_the_file_in_the_data_directory(tmp_path: Path) -> None:
    (tmp_path / "embedders.toml").write_text(FULL)
    settings = Settings.from_env(tmp_path, {"NOMIC_API_KEY": KEY})
    assert [c.name for c in settings.embedders] == ["nomic", "tiny", "bundled"]
    assert settings.default_embedder == "nomic"


def test_settings_read_the_file_the_variable_names(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('default = "tiny"\n[embedders.tiny]\nkind = "fake"\ndimensions = 4\n')
    (tmp_path / "embedders.toml").write_text(FULL)  # not read: the variable wins
    settings = Settings.from_env(tmp_path, {"LOREBASE_EMBEDDERS": str(other)})
    assert [c.name for c in settings.embedders] == ["tiny"]
    assert settings.default_embedder == "tiny"


def test_settings_without_a_file_have_no_named_embedders(tmp_path: Path) -> None:
    settings = Settings.from_env(tmp_path, {})
    assert (settings.embedders, settings.default_embedder) == ((), None)


def test_a_named_file_that_is_missing_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(InvalidInput) as info:
        Settings.from_env(tmp_path, {"LOREBASE_EMBEDDERS": str(missing)})
    assert "LOREBASE_EMBEDDERS" in str(info.value) and str(missing) in str(info.value)


def test_an_embedder_declares_the_languages_it_reads(tmp_path: Path) -> None:
    text = '[embedders.x]\nurl = "http://127.0.0.1:9/v1"\nmodel = "m"\nlanguages = ["en", "de"]\n'
    (config,) = load_embedders(write(tmp_path, text), {})[0]
    assert config.languages == ("en", "de")
    from lorebase.embed.registry import http_embedder

    assert http_embedder(config).languages == frozenset({"en", "de"})
    (unsaid,) = load_embedders(write(tmp_path, '[embedders.y]\nurl = "h"\nmodel = "m"\n'), {})[0]
    assert unsaid.languages is None  # every language
    fake = '[embedders.f]\nkind = "fake"\ndimensions = 4\nlanguages = ["fr"]\n'
    (faked,) = load_embedders(write(tmp_path, fake), {})[0]
    assert faked.languages == ("fr",)


@pytest.mark.parametrize("value", ['"en"', '["English"]', "[1]", '["en-US"]', "[]"], ids=str)
def test_languages_must_be_iso_codes(tmp_path: Path, value: str) -> None:
    message = refused(tmp_path, f'[embedders.x]\nurl = "h"\nmodel = "m"\nlanguages = {value}\n')
    assert "languages" in message and '["en"' in message


def test_the_bundled_model_reads_english_and_says_so(tmp_path: Path) -> None:
    message = refused(tmp_path, '[embedders.bundled]\nlanguages = ["de"]\n')
    assert "key 'languages'" in message
    from lorebase.embed.onnx import OnnxEmbedder

    assert OnnxEmbedder.languages == frozenset({"en"})
