import os
from pathlib import Path

import pytest

from lorebase.ingest.sources import WalkProblem, iter_files


def names(root: Path, problems: list[WalkProblem] | None = None) -> list[str]:
    return [p.relative_to(root.resolve()).as_posix() for p in iter_files(root, problems)]


def test_hidden_files_and_folders_are_never_listed(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a")
    (tmp_path / ".secret.md").write_text("s")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config.txt").write_text("c")
    (tmp_path / "sub" / ".lorebase").mkdir(parents=True)
    (tmp_path / "sub" / ".lorebase" / "evals.jsonl").write_text("{}")
    (tmp_path / "sub" / "b.txt").write_text("b")
    assert names(tmp_path) == ["a.md", "sub/b.txt"]


def test_order_is_stable_and_depth_first(tmp_path: Path) -> None:
    for rel in ["b/2.txt", "a/1.txt", "c.txt", "a/z/3.txt"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert names(tmp_path) == ["a/1.txt", "a/z/3.txt", "b/2.txt", "c.txt"]


def test_links_out_of_the_root_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("p")
    root = tmp_path / "root"
    root.mkdir()
    (root / "ok.txt").write_text("o")
    (root / "linked.txt").symlink_to(outside / "private.txt")
    (root / "linked-dir").symlink_to(outside, target_is_directory=True)
    (root / "dangling.txt").symlink_to(tmp_path / "missing.txt")
    (root / "loop").symlink_to(root / "loop")
    assert names(root) == ["ok.txt"]


def test_links_inside_the_root_are_read_but_not_into_hidden_places(tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text("d")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "h.txt").write_text("h")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "doc.txt")
    (tmp_path / "peek.txt").symlink_to(tmp_path / ".hidden" / "h.txt")
    assert names(tmp_path) == ["alias.txt", "doc.txt"]


def test_hostile_file_names_are_listed_as_they_are(tmp_path: Path) -> None:
    hostile = [
        "-rf.md",
        "new\nline.txt",
        "spaces  and\ttabs.md",
        "ünïcödé 東京.txt",
        "x" * 200 + ".txt",
        "semi;colon$(rm).txt",
        "back\\slash.md",
    ]
    for name in hostile:
        (tmp_path / name).write_text("content")
    assert sorted(names(tmp_path)) == sorted(hostile)


def test_an_unlistable_folder_is_reported_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root (as in CI) lists any folder whatever its mode, so the refusal is simulated.
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "x.txt").write_text("x")
    (tmp_path / "open.txt").write_text("o")
    real_scandir = os.scandir

    def scandir(path: str | os.PathLike[str]) -> object:
        if Path(path) == locked.resolve():
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)  # the module sources.py walks with
    problems: list[WalkProblem] = []
    assert names(tmp_path, problems) == ["open.txt"]
    assert [(p.path, p.error) for p in problems] == [(locked.resolve(), "PermissionError")]
