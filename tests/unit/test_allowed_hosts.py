"""Which Host a server answers to (DNS rebinding, issue 27): pure functions, and the settings
and the command line that configure them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from lorebase.api.guard import host_allowed, host_name, url_host
from lorebase.cli.main import app
from lorebase.cli.serving import answers_to
from lorebase.errors import InvalidInput
from lorebase.settings import ServeSettings


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:7700", "127.0.0.1"),
        ("LocalHost", "localhost"),
        ("[::1]:7700", "[::1]"),
        ("docs.example.", "docs.example"),
        ("Docs.Example:443", "docs.example"),
        ("fe80::1", "fe80::1"),  # an unbracketed IPv6 literal is no host:port
    ],
)
def test_the_host_a_header_names(header: str, name: str) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize(
    ("header", "allowed", "bound", "answered"),
    [
        ("127.0.0.1:7700", (), "127.0.0.1", True),
        ("localhost:7700", (), "127.0.0.1", True),
        ("127.9.9.9", (), "127.0.0.1", True),
        ("[::1]:7700", (), "127.0.0.1", True),
        ("evil.example:7700", (), "127.0.0.1", False),
        ("evil.example", ("docs.example",), "127.0.0.1", False),
        ("docs.example:8080", ("docs.example",), "0.0.0.0", True),
        ("DOCS.EXAMPLE", ("docs.example",), "0.0.0.0", True),
        ("10.0.0.5:7700", (), "10.0.0.5", True),  # the address it is bound to
        ("10.0.0.5:7700", (), "0.0.0.0", False),  # every address: names must be allowed
        ("[fd00::5]:7700", (), "fd00::5", True),
        ("anything", ("*",), "127.0.0.1", True),
        (None, (), "127.0.0.1", False),
        ("", (), "127.0.0.1", False),
        ("127.0.0.1.evil.example", (), "127.0.0.1", False),
        ("localhost.evil.example", (), "127.0.0.1", False),
    ],
)
def test_which_hosts_are_answered(
    header: str | None, allowed: tuple[str, ...], bound: str, answered: bool
) -> None:
    assert host_allowed(header, allowed, bound) is answered


@given(st.text(max_size=60))
def test_no_header_crashes_the_check_and_only_loopback_passes_by_default(header: str) -> None:
    if host_allowed(header, (), "127.0.0.1"):
        name = host_name(header)
        assert name in ("localhost", "[::1]") or name.startswith("127.") or "::" in name


def test_url_hosts_bracket_ipv6() -> None:
    assert url_host("fd00::5") == "[fd00::5]" and url_host("Docs.Example") == "docs.example"


def test_allowed_hosts_are_checked() -> None:
    assert ServeSettings(allowed_hosts=("docs.example", "10.0.0.5", "[fd00::5]", "*"))
    for bad in ("http://docs.example", "docs.example:80", "a b", "", "-x"):
        with pytest.raises(InvalidInput, match="allowed host"):
            ServeSettings(allowed_hosts=(bad,))


def test_the_start_up_line_says_what_is_answered() -> None:
    assert "127.0.0.1, localhost, [::1]" in answers_to(ServeSettings())
    wide = answers_to(ServeSettings(host="0.0.0.0", allowed_hosts=()))
    assert "--allowed-host" in wide
    named = answers_to(ServeSettings(host="0.0.0.0", allowed_hosts=("docs.example",)))
    assert named.endswith("docs.example")
    assert "any host name" in answers_to(ServeSettings(allowed_hosts=("*",)))


def test_serve_refuses_a_malformed_allowed_host(tmp_path: object) -> None:
    result = CliRunner().invoke(
        app, ["--data-dir", str(tmp_path), "serve", "--allowed-host", "http://x"]
    )
    assert result.exit_code == 2 and "allowed host" in result.output
