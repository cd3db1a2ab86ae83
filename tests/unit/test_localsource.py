"""Local sources: a tree or a git commit as a variant's line, identified by its content.

These use small trees that look like an mbedTLS or wolfSSL tree to the detection (their
marker files), with real git repositories; nothing is built here (test_own_code.py builds
mbedTLS from git).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tlsbench.builds import localsource
from tlsbench.builds.build import Builder
from tlsbench.builds.variants import Catalog
from tlsbench.cli import main
from tlsbench.core.errors import UserError

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}  # fmt: skip


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env={**os.environ, **GIT_ENV}).stdout.strip()  # fmt: skip


def fake_mbedtls(root: Path) -> Path:
    (root / "include" / "mbedtls").mkdir(parents=True)
    (root / "include" / "mbedtls" / "ssl.h").write_text("/* ssl */\n")
    (root / "include" / "mbedtls" / "build_info.h").write_text(
        '#define MBEDTLS_VERSION_STRING         "3.6.99"\n'
    )
    (root / "library").mkdir()
    (root / "library" / "ssl_tls.c").write_text("int x;\n")
    (root / "scripts").mkdir()
    (root / "scripts" / "run.sh").write_text("#!/bin/sh\n")
    (root / "scripts" / "run.sh").chmod(0o755)
    return root


def repo_of(root: Path) -> Path:
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("build/\n*.o\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "release")
    return root


@pytest.fixture(autouse=True)
def _fresh_snapshots():
    """Each test reads its trees afresh (a process keeps one snapshot per tree)."""
    localsource.forget_snapshots()
    yield
    localsource.forget_snapshots()


def test_a_folder_is_recognised_and_hashed_without_its_build_outputs(tmp_path: Path) -> None:
    tree = fake_mbedtls(tmp_path / "mbedtls")
    source = localsource.resolve("@mbedtls", tmp_path, ["mbedtls", "wolfssl"])
    assert (source.library, source.path, source.rev) == ("mbedtls", tree, None)
    assert source.spec == f"mbedtls@{tree}"
    first = source.snapshot()
    assert (first.kind, first.dirty, first.tree) == ("tree", None, None)
    # Build outputs change nothing; a source edit changes the content key.
    (tree / "library" / "ssl_tls.o").write_bytes(b"\x7fELF")
    (tree / "CMakeFiles").mkdir()
    (tree / "CMakeFiles" / "x.txt").write_text("cmake\n")
    localsource.forget_snapshots()
    assert source.snapshot().sha256 == first.sha256
    (tree / "library" / "ssl_tls.c").write_text("int x; /* changed */\n")
    localsource.forget_snapshots()
    assert source.snapshot().sha256 != first.sha256
    # The executable bit is content too (configure scripts must stay runnable).
    localsource.forget_snapshots()
    changed = source.snapshot().sha256
    (tree / "scripts" / "run.sh").chmod(0o644)
    localsource.forget_snapshots()
    assert source.snapshot().sha256 != changed


def test_a_commit_is_its_tree_id_and_exports_with_git_archive(tmp_path: Path) -> None:
    tree = repo_of(fake_mbedtls(tmp_path / "mbedtls"))
    release = git(tree, "rev-parse", "HEAD")
    (tree / "library" / "ssl_tls.c").write_text("int x; /* a comment */\n")
    git(tree, "commit", "-qam", "comment")
    source = localsource.resolve(f"mbedtls@{tree}#{release}", tmp_path, ["mbedtls"])
    snap = source.snapshot()
    assert (snap.kind, snap.commit, snap.dirty) == ("commit", release, False)
    assert snap.tree == git(tree, "rev-parse", f"{release}^{{tree}}")
    assert snap.key() == {"kind": "git-tree", "id": snap.tree}
    exported = source.export(tmp_path / "cache")
    assert (exported / "library" / "ssl_tls.c").read_text() == "int x;\n"
    assert os.access(exported / "scripts" / "run.sh", os.X_OK)
    # A branch name resolves to its commit; the head commit has another tree.
    head = localsource.resolve(f"mbedtls@{tree}#main", tmp_path, ["mbedtls"]).snapshot()
    assert head.commit == git(tree, "rev-parse", "HEAD") and head.tree != snap.tree


def test_a_work_tree_is_its_head_when_clean_and_dirty_with_changes(tmp_path: Path) -> None:
    tree = repo_of(fake_mbedtls(tmp_path / "mbedtls"))
    source = localsource.resolve(f"mbedtls@{tree}", tmp_path, ["mbedtls"])
    clean = source.snapshot()
    head_tree = git(tree, "rev-parse", "HEAD^{tree}")
    assert (clean.kind, clean.dirty, clean.tree) == ("worktree", False, head_tree)
    # What git ignores (build outputs) leaves it clean.
    (tree / "build").mkdir()
    (tree / "build" / "libmbedtls.a").write_bytes(b"!<arch>\n")
    localsource.forget_snapshots()
    assert source.snapshot() == clean
    # A changed file or a new file git does not ignore makes it dirty, keyed by content.
    (tree / "library" / "new.c").write_text("int y;\n")
    localsource.forget_snapshots()
    dirty = source.snapshot()
    assert (dirty.dirty, dirty.tree, dirty.commit) == (True, None, clean.commit)
    exported = source.export(tmp_path / "cache")
    assert (exported / "library" / "new.c").read_text() == "int y;\n"
    assert not (exported / "build").exists()


def test_a_tree_edited_while_it_is_copied_is_an_error(tmp_path: Path) -> None:
    tree = fake_mbedtls(tmp_path / "mbedtls")
    source = localsource.resolve(f"mbedtls@{tree}", tmp_path, ["mbedtls"])
    source.snapshot()
    (tree / "library" / "ssl_tls.c").write_text("int x; /* edited meanwhile */\n")
    with pytest.raises(UserError, match="changed while tlsbench copied it"):
        source.export(tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("local-*/"))  # nothing half-copied is kept


def test_submodules_are_exported_from_their_own_clone(tmp_path: Path) -> None:
    framework = tmp_path / "framework-origin"
    framework.mkdir()
    (framework / "util.py").write_text("print('framework')\n")
    repo_of(framework)
    tree = repo_of(fake_mbedtls(tmp_path / "mbedtls"))
    git(tree, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(framework),
        "framework")  # fmt: skip
    git(tree, "commit", "-qm", "framework")
    snap = localsource.resolve(f"mbedtls@{tree}#HEAD", tmp_path, ["mbedtls"])
    exported = snap.export(tmp_path / "cache")
    assert (exported / "framework" / "util.py").read_text() == "print('framework')\n"
    # A clone without the submodule checked out exports it empty and says so.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(tree), str(clone)], check=True)
    missing = localsource.resolve(f"mbedtls@{clone}#HEAD", tmp_path, ["mbedtls"]).snapshot()
    assert missing.missing_submodules == ("framework",)


def test_a_library_in_a_subfolder_of_a_repository(tmp_path: Path) -> None:
    project = tmp_path / "firmware"
    fake_mbedtls(project / "third_party" / "mbedtls")
    (project / "main.c").write_text("int main(void) { return 0; }\n")
    repo_of(project)
    source = localsource.resolve("@firmware/third_party/mbedtls#main", tmp_path, ["mbedtls"])
    snap = source.snapshot()
    assert snap.tree == git(project, "rev-parse", "HEAD:third_party/mbedtls")
    exported = source.export(tmp_path / "cache")
    assert (exported / "include" / "mbedtls" / "ssl.h").exists()
    assert not (exported / "main.c").exists()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mbedtls@missing", "does not exist"),
        ("mbedtls@plain#main", "is not in a git repository"),
        ("mbedtls@repo#no-such-branch", "has no commit 'no-such-branch'"),
        ("wolfssl@repo", "looks like a mbedtls tree, not wolfssl"),
        ("rustls@repo", "cannot be built from a local tree"),
        ("nosuchlib@repo", "unknown library 'nosuchlib'"),
        ("@empty", "cannot tell which library"),
        ("mbedtls@repo#", "nothing after '#'"),
        ("mbedtls@", "no path after '@'"),
    ],
)
def test_bad_local_specs_say_what_is_wrong(tmp_path: Path, spec: str, message: str) -> None:
    fake_mbedtls(tmp_path / "plain")
    repo_of(fake_mbedtls(tmp_path / "repo"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=message) as caught:
        localsource.resolve(spec, tmp_path, ["mbedtls", "wolfssl", "rustls"])
    assert caught.value.exit_code == 2


def test_variants_of_a_local_line_take_options_and_key_by_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = repo_of(fake_mbedtls(tmp_path / "mbedtls"))
    catalog = Catalog()
    variant = catalog.resolve("mbedtls@mbedtls#main:records-4096", tmp_path)
    assert variant.name == f"mbedtls@{tree}#main:records-4096"
    assert variant.macros["MBEDTLS_SSL_IN_CONTENT_LEN"] == "4096"
    assert variant.line.folder_name == "mbedtls-local"
    # Relative to the current folder on the command line.
    monkeypatch.chdir(tmp_path)
    assert catalog.resolve("mbedtls@./mbedtls#main:records-4096").name == variant.name
    # The key is the content: a copy of the repository elsewhere builds the same.
    builder = Builder(cache=tmp_path / "cache", quiet=True)
    copy = tmp_path / "copy"
    shutil.copytree(tree, copy)
    other = catalog.resolve(f"mbedtls@{copy}#main:records-4096")
    assert other.name != variant.name
    assert builder.key(other) == builder.key(variant)
    assert builder.key_inputs(variant)["source"] == {
        "kind": "git-tree", "id": git(tree, "rev-parse", "HEAD^{tree}")}  # fmt: skip
    (copy / "library" / "ssl_tls.c").write_text("int x; /* changed */\n")
    git(copy, "commit", "-qam", "change")
    assert builder.key(other) == builder.key(variant)  # one snapshot per process
    localsource.forget_snapshots()
    assert builder.key(other) != builder.key(variant)


def test_cli_refuses_a_bad_local_source_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["build", f"mbedtls@{tmp_path / 'nothing-here'}"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err


def test_the_report_names_path_commit_content_and_dirty_flag(tmp_path: Path) -> None:
    from tlsbench.reportkit.model import describe_source

    tree = repo_of(fake_mbedtls(tmp_path / "mbedtls"))
    commit = git(tree, "rev-parse", "HEAD")
    snap = localsource.resolve(f"mbedtls@{tree}#main", tmp_path, ["mbedtls"]).snapshot()
    assert describe_source(snap.describe()) == (
        f"git {tree}#main: commit {commit[:12]}, tree {str(snap.tree)[:12]}"
    )
    (tree / "library" / "ssl_tls.c").write_text("int x; /* work in progress */\n")
    dirty = localsource.resolve(f"mbedtls@{tree}", tmp_path, ["mbedtls"]).snapshot()
    assert describe_source(dirty.describe()) == (
        f"git work tree {tree} at {commit[:12]}, dirty: files sha256 {str(dirty.sha256)[:12]}"
    )


def test_a_shared_build_names_the_code_of_the_variant_that_uses_it(tmp_path: Path) -> None:
    """A build is shared by every path and name of its content: what a point stores of its
    source is its own variant's (path, revision), not the first builder's manifest."""
    from tlsbench.builds.build import Build

    tree = repo_of(fake_mbedtls(tmp_path / "mbedtls"))
    variant = Catalog().resolve(f"mbedtls@{tree}#main")
    drivers = tmp_path / "drivers"
    drivers.mkdir()
    (drivers / "probe.json").write_text("{}")
    manifest = {"version": "3.6.99", "link": {"library_files": []}, "inputs": {"compiler": "cc"},
                "build_seconds": 1.0, "source": {"kind": "local-commit", "path": "/elsewhere",
                                                 "rev": "old-name"}}  # fmt: skip
    described = Build(variant, "k" * 64, tmp_path, manifest, drivers).describe()
    assert (described["source"]["path"], described["source"]["rev"]) == (str(tree), "main")
    assert described["source"]["commit"] == git(tree, "rev-parse", "main")


def test_experiments_and_variants_toml_name_local_sources_relative_to_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tlsbench.core import paths
    from tlsbench.run import experiments

    tree = repo_of(fake_mbedtls(tmp_path / "project" / "mbedtls"))
    experiment = tmp_path / "project" / "mine.toml"
    experiment.write_text(
        'question = "Does my branch cost more heap?"\n'
        '[matrix]\nvariant = ["mbedtls@mbedtls#main", "mbedtls@./mbedtls:records-4096"]\n'
        'scenario = ["handshake"]\n'
    )
    variants_file = tmp_path / "project" / "variants.toml"
    variants_file.write_text(
        paths.VARIANTS_FILE.read_text().replace(
            "[variants]\n", '[variants]\nmine = "mbedtls@mbedtls#main:no-debug"\n'
        )
    )
    monkeypatch.chdir(tmp_path)  # elsewhere: the paths are the files' own
    catalog = Catalog(variants_file)
    points = experiments.load(str(experiment), catalog).points
    assert sorted(p.variant for p in points) == [f"mbedtls@{tree}#main",
                                                 f"mbedtls@{tree}:records-4096"]  # fmt: skip
    assert catalog.resolve("mine").name == f"mbedtls@{tree}#main:no-debug"
