"""The README's quick start, the CLI docs and --help stay true."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from lorebase.cli.main import app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def quick_start_commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the quick start needs a sh code block"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_quick_start_is_two_make_commands_that_exist() -> None:
    commands = quick_start_commands()
    assert commands == ["make run", "make test"]
    makefile = (REPO / "Makefile").read_text()
    for command in commands:
        target = command.split()[1]
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile has no {target} target"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert "make test" in ci


def command_paths() -> list[tuple[str, ...]]:
    """Every command, with sub-commands of groups (``("kb", "sources", "add")``)."""

    def walk(group: TyperGroup, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        found: list[tuple[str, ...]] = []
        for name, command in group.commands.items():
            if isinstance(command, TyperGroup):  # a group
                found += walk(command, (*prefix, name))
            else:
                found.append((*prefix, name))
        return found

    return sorted(walk(typer.main.get_group(app), ()))


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_every_command_has_help_and_docs(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0
    assert len(result.output) > 150
    docs = (REPO / "docs" / "cli.md").read_text()
    top = path[0]
    group = " ".join(path[:-1])
    assert f"`lorebase {' '.join(path)}" in docs or re.search(
        rf"`lorebase {group} [a-z|]*{path[-1]}", docs
    ), f"docs/cli.md does not describe lorebase {' '.join(path)}"
    assert f"lorebase {top}" in (REPO / "README.md").read_text()


def test_every_documented_option_exists() -> None:
    documented = set(re.findall(r"`(--[a-z-]+)", (REPO / "docs" / "cli.md").read_text()))
    offered = set(re.findall(r"--[a-z-]+", runner.invoke(app, ["--help"]).output))
    for path in command_paths():
        offered |= set(re.findall(r"--[a-z-]+", runner.invoke(app, [*path, "--help"]).output))
    assert documented <= offered, documented - offered


def test_cli_docs_list_exactly_the_mapped_exit_codes() -> None:
    from lorebase.cli.common import EXIT_CODES

    documented = {int(code) for code in re.findall(r"^\| `(\d+)` \|", _doc("cli.md"), re.M)}
    assert documented == {0, *EXIT_CODES.values()}


def test_api_docs_list_exactly_the_mapped_problem_types() -> None:
    from lorebase.api.problems import OTHER_HTTP_ERROR, PROBLEMS, REQUEST_PROBLEMS

    rows = re.findall(r"^\| `/problems/([a-z-]+)` \| `?([^|`]+?)`? \|", _doc("api.md"), re.M)
    documented = {(slug, status.strip()) for slug, status in rows}
    mapped = {(slug, str(status)) for status, slug, _ in PROBLEMS.values()}
    mapped |= {(slug, str(status)) for status, (slug, _) in REQUEST_PROBLEMS.items()}
    assert {pair for pair in documented if pair[0] != OTHER_HTTP_ERROR} == mapped
    assert OTHER_HTTP_ERROR in {slug for slug, _ in documented}


def test_agent_docs_list_exactly_the_tool_error_codes() -> None:
    from lorebase.agent.tools import TOOL_ERROR_CODES

    section = _doc("agents.md").split("A failed tool call", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"`([a-z_]+)`", section))
    assert documented == set(TOOL_ERROR_CODES.values())


def _doc(name: str) -> str:
    return (REPO / "docs" / name).read_text()


def test_make_run_installs_only_what_running_needs() -> None:
    """The dev extra (pytest, schemathesis, mypy, …) is for `make test`, not `make run`."""
    makefile = (REPO / "Makefile").read_text()
    run_stamp = re.search(r"^\$\(STAMP\):.*?(?=^\S)", makefile, re.M | re.S)
    assert run_stamp and ".[dev]" not in run_stamp.group(0)
    assert re.search(r"^run: \$\(STAMP\)$", makefile, re.M)
    assert re.search(r"^run-all: \$\(STAMP\)$", makefile, re.M)
    assert re.search(r"^test: \$\(DEV_STAMP\)$", makefile, re.M)


def _recipe(makefile: str, target: str) -> str:
    found = re.search(rf"^{target}:.*?\n((?:\t.*\n)+)", makefile, re.M)
    assert found, f"Makefile has no {target} recipe"
    return found.group(1)


def test_make_run_indexes_the_small_files_first_and_says_so() -> None:
    """The first `make run` stays short (issue 16: under 3 minutes here) by leaving the
    large sample files for `make run-all`; the README's quick start says which and how."""
    makefile = (REPO / "Makefile").read_text()
    first_kb = re.search(r"^FIRST_KB \?= (\d+)$", makefile, re.M)
    assert first_kb
    assert "--defer-over-kb $(FIRST_KB)" in _recipe(makefile, "run")
    assert "--defer-over-kb" not in _recipe(makefile, "run-all")
    for target in ("run", "run-all"):
        assert "search" in _recipe(makefile, target)  # both end on a cited answer
    quick_start = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ")[0]
    assert "make run-all" in quick_start
    assert f"{first_kb.group(1)} KB" in quick_start


def test_the_quick_start_says_what_a_plain_clone_indexes() -> None:
    """Without ../shared/data/docs, `make run` indexes this repository's docs/: the README
    says how many files that is (and that the 73-of-85 figure is the sample documents')."""
    quick_start = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ")[0]
    flat = " ".join(quick_start.split())
    from lorebase.ingest.sources import iter_files  # what `lorebase add docs` reads

    own = list(iter_files(REPO / "docs"))
    assert f"own `docs/` ({len(own)} files" in flat
    assert all(p.stat().st_size <= 200 * 1024 for p in own)  # all indexed by the first run
    assert "of the 85 sample documents, 73" in flat


def test_every_command_but_the_long_running_ones_takes_json() -> None:
    """The README promises `--json` on every command that ends."""

    def leaves(command: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from leaves(sub, f"{prefix} {name}".strip())
        else:
            yield prefix, command

    running = {"serve", "worker", "watch", "mcp"}
    missing = [
        name
        for name, command in leaves(typer.main.get_command(app))
        if name not in running
        and "--json" not in {o for p in command.params for o in getattr(p, "opts", ())}
    ]
    assert missing == []
    readme = " ".join((REPO / "README.md").read_text().split())
    assert all(f"`{name}`" in readme for name in running)
