"""discover(): git listing (.gitignore, untracked files), the tree walk elsewhere, and the skip rules."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from learning_memory.shared.contracts.code import Language
from learning_memory.worker.code.index.discover import MAX_FILE_BYTES, discover

SUFFIXES: dict[str, Language] = {".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go"}


def lang(path: PurePosixPath) -> Language | None:
    """A stand-in for the parser's language_for, so these tests need no grammar."""
    return SUFFIXES.get(path.suffix)


def write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def names(found: list[PurePosixPath]) -> set[str]:
    return {str(path) for path in found}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    write(root, ".gitignore", "ignored.py\ngenerated/\n")
    write(root, "tracked.py")
    write(root, "pkg/mod.py")
    write(root, "web/app.js", "export const a = 1;\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    write(root, "untracked.py")  # not ignored: included
    write(root, "ignored.py")
    write(root, "generated/out.py")
    return root


def test_git_honours_gitignore_and_includes_untracked_files(repo: Path) -> None:
    found = discover(repo, True, language_of=lang)
    assert found.git
    assert names(found.files) == {"tracked.py", "pkg/mod.py", "web/app.js", "untracked.py"}
    assert found.files == sorted(found.files)
    assert found.skipped == 1  # .gitignore itself: no language


def test_git_listing_of_a_subfolder_is_relative_to_it(repo: Path) -> None:
    found = discover(repo / "pkg", True, language_of=lang)
    assert names(found.files) == {"mod.py"}


def test_git_skips_deleted_tracked_files_and_dependency_folders(repo: Path) -> None:
    (repo / "tracked.py").unlink()  # still in the index, gone from disk
    for rel in ("node_modules/lib/index.js", "vendor/dep.go", ".hidden/secret.py", "pkg/__pycache__/m.py"):
        write(repo, rel)
    found = discover(repo, True, language_of=lang)
    assert names(found.files) == {"pkg/mod.py", "web/app.js", "untracked.py"}
    assert found.skipped == 1 + 1 + 4  # .gitignore, the deleted file, the four in skipped folders


def test_a_folder_git_ignores_is_walked(repo: Path) -> None:
    write(repo, "generated/deep/more.py")
    found = discover(repo / "generated", True, language_of=lang)
    assert not found.git
    assert names(found.files) == {"out.py", "deep/more.py"}


def test_recursive_false_keeps_the_top_folder_only(repo: Path, tmp_path: Path) -> None:
    assert names(discover(repo, False, language_of=lang).files) == {"tracked.py", "untracked.py"}
    plain = tmp_path / "plain"
    write(plain, "top.py")
    write(plain, "sub/deep.py")
    found = discover(plain, False, language_of=lang)
    assert not found.git
    assert names(found.files) == {"top.py"}


def test_walk_outside_git_prunes_dependency_build_and_hidden_folders(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, "main.py")
    write(root, "src/lib/util.ts", "export function f() {}\n")
    write(root, "README.md", "# hi\n")
    for folder in ("node_modules", ".venv", "venv", "dist", "build", "target", "__pycache__", ".cache"):
        write(root, f"{folder}/x.py")
    write(root, "src/site-packages/pkg/x.py")
    found = discover(root, True, language_of=lang)
    assert not found.git
    assert names(found.files) == {"main.py", "src/lib/util.ts"}
    assert found.skipped == 1  # README.md; pruned folders are never walked


@pytest.mark.parametrize("in_git", [False, True])
def test_big_binary_and_minified_files_are_skipped(tmp_path: Path, in_git: bool) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    if in_git:
        git(root, "init", "-q")
    write(root, "ok.py", "def f():\n    return 1\n")
    write(root, "huge.py", "x = 1\n" * (MAX_FILE_BYTES // 6 + 10))
    write(root, "blob.py", b"abc\0def\n")
    write(root, "jquery.min.js", "var a=1;\n")
    write(root, "bundle.js", "var a=1;" * 200 + "\n")  # one 1,600-character line
    write(root, "wide.py", "x = '" + "a" * 2_000 + "'\n")  # long lines in Python are not minification
    write(root, "app.js", "function f() {\n  return 1;\n}\n" * 100)
    found = discover(root, True, language_of=lang)
    assert found.git is in_git
    assert names(found.files) == {"ok.py", "wide.py", "app.js"}
    assert found.skipped == 4


def test_exactly_one_megabyte_is_kept(tmp_path: Path) -> None:
    write(tmp_path, "edge.py", "#" * MAX_FILE_BYTES)
    write(tmp_path, "over.py", "#" * (MAX_FILE_BYTES + 1))
    assert names(discover(tmp_path, True, language_of=lang).files) == {"edge.py"}


@pytest.mark.parametrize("in_git", [False, True])
def test_symlinks_never_lead_out_of_the_root(tmp_path: Path, in_git: bool) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.py")
    write(outside, "dir/inner.py")
    root = tmp_path / "proj"
    write(root, "real.py")
    os.symlink(outside / "secret.py", root / "leak.py")
    os.symlink(outside / "dir", root / "linked_dir")
    os.symlink(root / "real.py", root / "alias.py")  # inside the root: fine
    if in_git:
        git(root, "init", "-q")
    found = discover(root, True, language_of=lang)
    assert names(found.files) == {"real.py", "alias.py"}
    assert found.skipped >= 1  # leak.py (git also lists the folder link, as a file without language)


def test_a_symlinked_root_is_resolved(tmp_path: Path) -> None:
    write(tmp_path / "real", "a.py")
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert names(discover(tmp_path / "link", True, language_of=lang).files) == {"a.py"}


def test_default_language_lookup_is_the_parsers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from learning_memory.worker.code.index import parser

    monkeypatch.setattr(parser, "language_for", lambda path: "go" if path.suffix == ".go" else None)
    write(tmp_path, "a.go", "package a\n")
    write(tmp_path, "b.py")
    found = discover(tmp_path, True)
    assert names(found.files) == {"a.go"}
    assert found.skipped == 1
