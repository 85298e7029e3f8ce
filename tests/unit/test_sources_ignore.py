"""The walk of a code repository: ignore files, what is always left out, the limits."""

import logging
from collections import Counter
from pathlib import Path

import pytest

from lorebase.ingest.ignore import IgnoreRules, is_secret
from lorebase.ingest.sources import iter_files

SECRETS = (".env", ".env.local", "id_rsa", "id_ed25519.pub", "server.pem", "deploy.key")


def write(root: Path, rel: str, text: str = "x") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def walk(root: Path, **limits: int) -> tuple[list[str], Counter[str]]:
    left_out: Counter[str] = Counter()
    found = iter_files(root, None, left_out, **limits)
    return [p.relative_to(root.resolve()).as_posix() for p in found], left_out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A generated repository with every kind of thing a walk leaves out."""
    root = tmp_path / "repo"
    write(root, ".gitignore", "*.log\n!keep.log\nout/\n/vendor/\n# a comment\n")
    write(root, ".git/info/exclude", "scratch.md\n")
    write(root, ".git/HEAD", "ref: refs/heads/main\n")
    write(root, ".lorebaseignore", "docs/drafts/\n")
    write(root, "README.md")
    write(root, "app.log")
    write(root, "keep.log")
    write(root, "scratch.md")
    write(root, "out/result.txt")
    write(root, "vendor/lib.py")
    write(root, "src/vendor/inner.py")  # /vendor/ is anchored to the root
    write(root, "src/main.py")
    write(root, "src/.gitignore", "generated.py\n!app.log\n")
    write(root, "src/generated.py")
    write(root, "src/app.log")  # re-included by the deeper .gitignore
    write(root, "src/deep/.gitignore", "*\n!*.md\n")
    write(root, "src/deep/note.md")
    write(root, "src/deep/data.csv")
    write(root, "docs/guide.md")
    write(root, "docs/drafts/wip.md")
    write(root, "node_modules/pkg/index.js")
    write(root, "build/output.txt")
    write(root, "dist/pkg.whl")
    write(root, "src/__pycache__/main.pyc")
    write(root, "venv/pyvenv.cfg", "home = /usr/bin\n")
    write(root, "venv/lib/site.py")
    write(root, "conda/conda-meta/history")
    write(root, "conda/lib/x.py")
    for name in SECRETS:
        write(root, f"config/{name}", "hunter2")
    return root


def test_a_repository_walks_only_what_it_should(repo: Path) -> None:
    found, left_out = walk(repo)
    assert found == [
        "README.md",
        "docs/guide.md",
        "keep.log",
        "src/app.log",
        "src/deep/note.md",
        "src/main.py",
        "src/vendor/inner.py",
    ]
    assert left_out == {
        "ignored": 7,  # app.log, scratch.md, out/, vendor/, generated.py, data.csv, drafts/
        "version_control": 1,
        "dependency_or_build": 4,  # node_modules, build, dist, __pycache__
        "virtualenv": 2,
        "secret": len(SECRETS),
    }


def test_a_folder_without_ignore_files_walks_as_before(tmp_path: Path) -> None:
    for rel in ["a.md", "app.log", "sub/b.txt", "vendor/c.py", "sub/.hidden.md"]:
        write(tmp_path, rel)
    found, left_out = walk(tmp_path)
    assert found == ["a.md", "app.log", "sub/b.txt", "vendor/c.py"]
    assert left_out == {}


def test_lines_git_cannot_read_are_skipped_not_fatal(tmp_path: Path) -> None:
    """A hostile or broken ignore file ('!' alone, a lone backslash, a reversed range, bytes
    that are not UTF-8) must not stop the walk; its readable lines still count."""
    (tmp_path / ".gitignore").write_bytes(b"!\n\\\n[z-a]\n\xff\xfe\n*.log\n")
    for rel in ["a.md", "app.log"]:
        write(tmp_path, rel)
    found, left_out = walk(tmp_path)
    assert found == ["a.md"]
    assert left_out == {"ignored": 1}


def test_an_ignored_folder_is_not_descended(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "cache/\n!cache/keep.md\n")
    write(tmp_path, "cache/keep.md")
    write(tmp_path, "cache/sub/x.md")
    found, left_out = walk(tmp_path)
    assert found == []
    assert left_out == {"ignored": 1}


def test_lorebaseignore_wins_over_gitignore_in_its_folder(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.md\n")
    write(tmp_path, ".lorebaseignore", "!wanted.md\n")
    write(tmp_path, "wanted.md")
    write(tmp_path, "other.md")
    assert walk(tmp_path)[0] == ["wanted.md"]


def test_a_link_to_a_secret_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path, "id_rsa", "key")
    (tmp_path / "notes.txt").symlink_to(tmp_path / "id_rsa")
    found, left_out = walk(tmp_path)
    assert found == []
    assert left_out == {"secret": 1}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        (".env", True),
        (".env.production", True),
        ("ID_RSA", True),
        ("cert.PEM", True),
        ("credentials.json", True),
        (".npmrc", True),
        ("environment.md", False),
        ("keynote.md", False),
        ("monkey.txt", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret(name) is secret


def test_rules_without_ignore_files_ignore_nothing(tmp_path: Path) -> None:
    assert not IgnoreRules.at_root(tmp_path).ignored("anything.log", False)


def test_the_walk_stops_at_the_file_limit_in_path_order(tmp_path: Path) -> None:
    for i in range(5):
        write(tmp_path, f"f{i}.md")
    found, left_out = walk(tmp_path, max_files=3)
    assert found == ["f0.md", "f1.md", "f2.md"]
    assert left_out == {"over_source_limit": 2}


def test_the_walk_stops_at_the_byte_limit_in_path_order(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "x" * 40)
    write(tmp_path, "b.md", "x" * 40)
    write(tmp_path, "c.md", "x")  # would fit, but the walk stopped adding at b.md
    found, left_out = walk(tmp_path, max_bytes=50)
    assert found == ["a.md"]
    assert left_out == {"over_source_limit": 2}


def test_no_secret_path_is_logged(repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    found, left_out = walk(repo)
    text = caplog.text + repr(found) + repr(left_out)
    assert not any(name in text for name in SECRETS)


def test_the_watcher_ignores_events_inside_dependency_folders(tmp_path: Path) -> None:
    from lorebase.ingest.watch import _visible_under

    visible = _visible_under([tmp_path])
    assert visible(None, str(tmp_path / "src" / "main.py"))
    assert visible(None, str(tmp_path / "build"))  # a file may be named so
    assert not visible(None, str(tmp_path / "node_modules" / "pkg" / "index.js"))
    assert not visible(None, str(tmp_path / ".git" / "index"))
