"""The embedders file: the named embedders a knowledge base can be made with, in TOML.

::

    default = "nomic"            # optional: the embedder new knowledge bases get
    [embedders.nomic]
    kind = "http"                # http (the default) | fake | bundled
    url = "http://127.0.0.1:11434/v1"
    model = "nomic-embed-text"
    dimensions = 768
    truncate = 256
    query_prefix = "search_query: "
    document_prefix = "search_document: "
    api_key_env = "NOMIC_API_KEY"  # the key is read from this environment variable
    timeout = 60
    batch_size = 32
    no_answer_threshold = 0.45
    languages = ["en"]           # what the model reads (left out: every language)

    [embedders.bundled]          # the bundled model: only these two
    quantize = true
    no_answer_threshold = 0.35

Pure: :func:`load_embedders` is given the path and the environment (for ``api_key_env``);
:meth:`lorebase.settings.Settings.from_env` decides which file (:func:`embedders_path`). Every
mistake is an :class:`~lorebase.errors.InvalidInput` naming the file, the embedder and the key
and saying what to write instead; no message quotes a value (an API key may be one).
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lorebase.errors import InvalidInput
from lorebase.settings.embedders import BUNDLED, EmbedderConfig

ENV_VARIABLE = "LOREBASE_EMBEDDERS"
FILE_NAME = "embedders.toml"


@dataclass(frozen=True, slots=True)
class Key:
    """One key an embedder's table may hold: the types it takes, and an example line."""

    types: tuple[type, ...]
    what: str
    example: str


WHOLE = (int,)
NUMBER = (int, float)
TEXT = (str,)
KEYS: dict[str, Key] = {
    "kind": Key(TEXT, "http, fake or bundled", 'kind = "http"'),
    "url": Key(TEXT, "text", 'url = "http://127.0.0.1:11434/v1"'),
    "model": Key(TEXT, "text", 'model = "nomic-embed-text"'),
    "dimensions": Key(WHOLE, "a whole number", "dimensions = 768"),
    "truncate": Key(WHOLE, "a whole number", "truncate = 256"),
    "query_prefix": Key(TEXT, "text", 'query_prefix = "search_query: "'),
    "document_prefix": Key(TEXT, "text", 'document_prefix = "search_document: "'),
    "api_key_env": Key(TEXT, "the name of an environment variable", 'api_key_env = "MY_KEY"'),
    "api_key": Key(TEXT, "text", 'api_key_env = "MY_KEY" (and the key in that variable)'),
    "timeout": Key(NUMBER, "a number of seconds", "timeout = 60"),
    "batch_size": Key(WHOLE, "a whole number", "batch_size = 32"),
    "no_answer_threshold": Key(NUMBER, "a cosine", "no_answer_threshold = 0.45"),
    "quantize": Key((bool,), "true or false", "quantize = true"),
    "languages": Key((list,), "a list of ISO 639 codes", 'languages = ["en", "de"]'),
}
BUNDLED_KEYS = ("kind", "quantize", "no_answer_threshold")
TOP_KEYS = ("default", "embedders")


def embedders_path(environ: Mapping[str, str], data_dir: Path) -> Path | None:
    """The embedders file to read: ``LOREBASE_EMBEDDERS`` (which must exist), else
    ``embedders.toml`` in the data directory when it is there, else None."""
    named = environ.get(ENV_VARIABLE, "").strip()
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise InvalidInput(
                f"{ENV_VARIABLE} names {path}, which is not a file: write the embedders file "
                f"there, or unset {ENV_VARIABLE} to use {data_dir / FILE_NAME} when it exists"
            )
        return path
    default = data_dir / FILE_NAME
    return default if default.is_file() else None


def load_embedders(
    path: Path, environ: Mapping[str, str]
) -> tuple[tuple[EmbedderConfig, ...], str | None]:
    """The named embedders the file at ``path`` describes, and its ``default`` (None when it
    names none). ``environ``: where ``api_key_env`` variables are looked up."""
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except OSError as error:
        raise InvalidInput(
            f"{path}: cannot read the embedders file ({error.strerror or type(error).__name__})"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise InvalidInput(
            f"{path}: not valid TOML ({error}); each embedder is a table like "
            '[embedders.NAME] with lines like model = "nomic-embed-text"'
        ) from None
    for key in document:
        if key not in TOP_KEYS:
            raise InvalidInput(
                f"{path}: unknown top-level key {key!r}{_did_you_mean(key, TOP_KEYS)}; the file "
                'holds default = "NAME" and [embedders.NAME] tables'
            )
    default = document.get("default")
    if default is not None and not isinstance(default, str):
        raise InvalidInput(f'{path}: default must be an embedder\'s name, like default = "nomic"')
    tables = document.get("embedders", {})
    if not isinstance(tables, dict):
        raise InvalidInput(f"{path}: embedders must be tables, like [embedders.nomic]")
    configs = tuple(_config(path, name, table, environ) for name, table in tables.items())
    if default is not None and default not in {BUNDLED, *tables}:
        known = ", ".join(sorted({BUNDLED, *tables}))
        raise InvalidInput(
            f"{path}: default names {default!r}, which is not an embedder of this file; "
            f"name one of {known}, or add [embedders.{default}]"
        )
    return configs, default


def _config(path: Path, name: str, table: Any, environ: Mapping[str, str]) -> EmbedderConfig:
    """One ``[embedders.NAME]`` table, checked key by key."""
    where = f"{path}: embedder {name!r}"
    if not isinstance(table, dict):
        raise InvalidInput(f"{where} must be a table: [embedders.{name}] and its keys below it")
    allowed = BUNDLED_KEYS if name == BUNDLED else tuple(k for k in KEYS if k != "quantize")
    for key, value in table.items():
        if key not in allowed:
            raise InvalidInput(_unknown(where, name, key, allowed))
        spec = KEYS[key]
        # bool is an int in Python, never a number here.
        is_bool_for_number = isinstance(value, bool) and bool not in spec.types
        if not isinstance(value, spec.types) or is_bool_for_number:
            raise InvalidInput(
                f"{where}, key {key!r}: must be {spec.what} (a {_toml_type(value)} was given); "
                f"write it like {spec.example}"
            )
    options = dict(table)
    if name == BUNDLED:
        options.setdefault("kind", BUNDLED)
        if options["kind"] != BUNDLED:
            raise InvalidInput(
                f"{where}, key 'kind': {BUNDLED!r} is the bundled model's name; give another "
                f"model its own name, like [embedders.mine]"
            )
    options["api_key"] = _api_key(where, options, environ)
    variable = options.pop("api_key_env", None)
    if variable is not None and options["api_key"] is None:
        options["missing_key"] = variable  # that embedder does not answer; the others do
    if "timeout" in options:
        options["timeout"] = float(options["timeout"])
    if "no_answer_threshold" in options:
        options["no_answer_threshold"] = float(options["no_answer_threshold"])
    if "languages" in options:
        codes = options["languages"]
        if not all(isinstance(code, str) for code in codes):
            raise InvalidInput(
                f"{where}, key 'languages': must be {KEYS['languages'].what}; write it like "
                f"{KEYS['languages'].example}"
            )
        options["languages"] = tuple(codes)
    try:
        return EmbedderConfig(name=name, **options)
    except InvalidInput as error:
        raise InvalidInput(f"{path}: {error}") from None


def _api_key(where: str, options: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The key: from the variable ``api_key_env`` names, or ``api_key`` itself."""
    variable = options.get("api_key_env")
    if variable is None:
        key: str | None = options.get("api_key")
        return key
    if "api_key" in options:
        raise InvalidInput(
            f"{where}: both api_key and api_key_env are set; keep api_key_env (the key stays "
            "out of the file) and remove api_key"
        )
    value = environ.get(variable, "").strip()
    return value or None  # unset: the embedder is kept, and says so when it is used


def _unknown(where: str, name: str, key: str, allowed: tuple[str, ...]) -> str:
    if name == BUNDLED and key in KEYS:
        return (
            f"{where}, key {key!r}: the bundled model takes only quantize and "
            f"no_answer_threshold; remove {key}, or give another model its own table, like "
            "[embedders.mine]"
        )
    if key == "quantize":
        return f"{where}, key 'quantize': only the bundled model is quantized; remove it"
    return (
        f"{where}: unknown key {key!r}{_did_you_mean(key, allowed)}; the keys are "
        f"{', '.join(allowed)}"
    )


def _did_you_mean(key: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _toml_type(value: Any) -> str:
    """What TOML calls a value's type (never the value)."""
    for kind, word in ((bool, "boolean"), (int, "integer"), (float, "float"), (str, "string")):
        if isinstance(value, kind):
            return word
    return "table" if isinstance(value, dict) else "array" if isinstance(value, list) else "date"
