"""Sources that are not pins: a local source tree, or a commit of a local git repository.

A variant's line is written `LIBRARY@PATH` (the tree at PATH as it is now),
`LIBRARY@PATH#REV` (commit REV of the git repository at PATH: a branch, a tag or a commit
id), or `@PATH` / `@PATH#REV` (the library recognised from the tree). Nothing is fetched:
git only reads the user's own clone (rev-parse, ls-tree, status, ls-files, archive), and the
tree is copied into the cache before it is built, so a build never writes into the user's
tree.

The build's cache key is the content, never the path:

- a commit: its tree id (`git rev-parse COMMIT^{tree}`), exported with `git archive`, and
  each submodule's commit with its own `git archive` where the clone has it checked out;
- a git work tree as it is: when clean, HEAD's tree id (the same build as `#HEAD`); with
  changes (a tracked file changed, or a file git does not ignore added), a sha256 of its
  files (tracked, and untracked but not ignored: the build outputs git ignores stay out),
  marked dirty;
- a folder outside git: a sha256 of its files, build outputs left out (IGNORED_*).

A tree is read once per process (a snapshot), so that one run builds one content whatever
is edited meanwhile; its copy into the cache is hashed again and must give the snapshot's
digest, so a tree edited while tlsbench copies it is an error, never a build of a mixture.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tlsbench.core.errors import UserError

# Libraries whose recipe builds any tree of theirs; the others say why not.
NOT_FROM_SOURCE = {
    "null": "the harness baseline has no library source",
    "rustls": "rustls-ffi is built by cargo against the Cargo.lock tlsbench commits for its "
    "pinned crate (sources/cargo/), and a local tree has none there",
    "hacl": "the HACL* recipe compiles the files of two known snapshots, not any tree",
}
# What a folder outside git holds that is a build's output, not source.
IGNORED_DIRS = {".git", ".hg", ".svn", "__pycache__", "CMakeFiles", ".deps", ".libs",
                "autom4te.cache"}  # fmt: skip
IGNORED_SUFFIXES = (".o", ".obj", ".a", ".so", ".lo", ".la", ".pyc", ".gcno", ".gcda", ".dylib")
IGNORED_FILES = {"CMakeCache.txt"}
EXPORT_MARKER = ".tlsbench-exported"
GITLINK_MODE = "160000"


@dataclass(frozen=True)
class Snapshot:
    """What one local source is, as read once: the build key and what a figure names."""

    kind: str  # "commit" (#REV), "worktree" (a git work tree as is), "tree" (outside git)
    path: str
    rev: str | None  # as the user wrote it after '#'
    commit: str | None  # the commit (#REV), or a work tree's HEAD
    tree: str | None  # git tree id, when the content is exactly a commit's tree
    sha256: str | None  # digest of the files, when it is not
    dirty: bool | None  # a git work tree that differs from HEAD; None outside git
    missing_submodules: tuple[str, ...] = ()  # submodules the clone does not have

    @property
    def content_id(self) -> str:
        return self.tree or self.sha256 or ""

    def key(self) -> dict[str, str]:
        """The cache key's part for the source: content only (no path, no commit)."""
        if self.tree:
            return {"kind": "git-tree", "id": self.tree}
        return {"kind": "files", "sha256": self.sha256 or ""}

    def describe(self) -> dict[str, Any]:
        """What the build manifest, every stored point and the report carry."""
        return {**asdict(self), "kind": f"local-{self.kind}",
                "missing_submodules": list(self.missing_submodules)}  # fmt: skip


# -- parsing ---------------------------------------------------------------------------------


def is_local_spec(head: str) -> bool:
    return "@" in head


def parse(head: str, base: Path) -> tuple[str, Path, str | None]:
    """`LIB@PATH#REV` -> (LIB or "", absolute PATH, REV or None); PATH relative to `base`."""
    library, _, rest = head.partition("@")
    rev: str | None = None
    if "#" in rest:
        rest, _, rev = rest.rpartition("#")
        if not rev.strip():
            raise UserError(f"{head}: nothing after '#': name a commit, branch or tag")
        rev = rev.strip()
    if not rest.strip():
        raise UserError(f"{head}: no path after '@' (write LIBRARY@PATH or LIBRARY@PATH#REV)")
    path = Path(os.path.expanduser(rest.strip()))
    path = Path(os.path.normpath(path if path.is_absolute() else base / path))
    return library.strip(), path, rev


def resolve(head: str, base: Path, libraries: list[str]) -> LocalSource:
    """The local source a spec head names, checked: the folder, the commit, the library."""
    named, path, rev = parse(head, base)
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise UserError(f"{head}: {path} {what}; give the folder of a library's source tree")
    repo = _git_top(path)
    if rev is not None and repo is None:
        raise UserError(
            f"{head}: {path} is not in a git repository, so '#{rev}' names nothing; drop "
            "'#...' to build the folder as it is"
        )
    reader: _Reader
    if rev is not None:
        assert repo is not None
        commit = _commit_of(repo, path, rev, head)
        reader = _CommitReader(repo, commit, _prefix(path, repo))
    else:
        reader = _FolderReader(path)
    found = detect(reader)
    library = named or found
    if not library:
        raise UserError(
            f"{head}: cannot tell which library {path} holds (no mbedTLS, wolfSSL, OpenSSL, "
            "GnuTLS, AWS-LC or BoringSSL tree there); name it: LIBRARY@PATH, e.g. "
            f"mbedtls@{path}"
        )
    if library not in libraries:
        raise UserError(
            f"{head}: unknown library {library!r}; libraries: {', '.join(sorted(libraries))}"
        )
    if library in NOT_FROM_SOURCE:
        raise UserError(f"{head}: {library} cannot be built from a local tree: "
                        f"{NOT_FROM_SOURCE[library]}")  # fmt: skip
    if named and found and named != found:
        raise UserError(f"{head}: {path} looks like a {found} tree, not {named}; write "
                        f"{found}@... or give the right folder")  # fmt: skip
    if library == "gnutls" and not reader.exists("configure"):
        raise UserError(
            f"{head}: this GnuTLS tree has no configure script (a git checkout needs "
            "./bootstrap, which fetches gnulib); run it in the tree and give the tree as it "
            f"is: gnutls@{path}"
        )
    return LocalSource(library, path, rev)


# -- recognising a library ------------------------------------------------------------------


class _Reader:
    def exists(self, rel: str) -> bool:
        raise NotImplementedError

    def read(self, rel: str) -> str:
        raise NotImplementedError


class _FolderReader(_Reader):
    def __init__(self, root: Path) -> None:
        self.root = root

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()

    def read(self, rel: str) -> str:
        try:
            return (self.root / rel).read_text(errors="replace")
        except OSError:
            return ""


class _CommitReader(_Reader):
    def __init__(self, repo: Path, commit: str, prefix: str) -> None:
        self.repo, self.commit, self.prefix = repo, commit, prefix

    def _object(self, rel: str) -> str:
        return f"{self.commit}:{self.prefix}{rel}"

    def exists(self, rel: str) -> bool:
        return _git_ok(self.repo, "cat-file", "-e", self._object(rel))

    def read(self, rel: str) -> str:
        if not self.exists(rel):
            return ""
        return _git(self.repo, "show", self._object(rel))


def detect(reader: _Reader) -> str:
    """The library of a tree, from the files only its tree has ("" when none matches)."""
    if reader.exists("include/mbedtls/ssl.h"):
        return "mbedtls"
    if reader.exists("wolfssl/ssl.h"):
        return "wolfssl"
    if reader.exists("include/openssl/base.h"):  # the BoringSSL family
        base = reader.read("include/openssl/base.h")
        return "awslc" if "AWSLC" in base else "boringssl"
    if reader.exists("Configure") and (
        reader.exists("include/openssl/ssl.h") or reader.exists("include/openssl/ssl.h.in")
    ):
        return "openssl"
    if reader.exists("lib/includes/gnutls/gnutls.h.in"):
        return "gnutls"
    return ""


VERSION_PATTERNS = {
    "mbedtls": [("include/mbedtls/build_info.h", r'MBEDTLS_VERSION_STRING\s+"([^"]+)"'),
                ("include/mbedtls/version.h", r'MBEDTLS_VERSION_STRING\s+"([^"]+)"')],
    "wolfssl": [("wolfssl/version.h", r'LIBWOLFSSL_VERSION_STRING\s+"([^"]+)"'),
                ("configure.ac", r"AC_INIT\(\[wolfssl\],\s*\[([^\]]+)\]")],
    "openssl": [("VERSION.dat", r"MAJOR=(\d+)\s+MINOR=(\d+)\s+PATCH=(\d+)"),
                ("include/openssl/opensslv.h", r'OPENSSL_VERSION_TEXT\s+"OpenSSL ([^ "]+)')],
    "gnutls": [("configure.ac", r"AC_INIT\(\[GnuTLS\],\s*\[([^\]]+)\]")],
    "awslc": [("include/openssl/base.h", r'AWSLC_VERSION_NUMBER_STRING\s+"([^"]+)"')],
    "boringssl": [("include/openssl/base.h", r"BORINGSSL_API_VERSION\s+(\d+)")],
}  # fmt: skip


def tree_version(library: str, source: Path) -> str:
    """The library's own version as its tree states it ("unknown" when it does not)."""
    reader = _FolderReader(source)
    for rel, pattern in VERSION_PATTERNS.get(library, []):
        found = re.search(pattern, reader.read(rel))
        if found:
            return ".".join(found.groups())
    return "unknown"


# -- git ------------------------------------------------------------------------------------


def _git_run(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("git") is None:
        raise UserError("git is not installed; a source named PATH#REV is read with git")
    env = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=env,
                          check=False)  # fmt: skip


def _git(repo: Path, *args: str) -> str:
    proc = _git_run(repo, *args)
    if proc.returncode != 0:
        raise UserError(
            f"git {' '.join(args)} in {repo} failed: "
            f"{proc.stderr.decode(errors='replace').strip()}",
            exit_code=1,
        )
    return proc.stdout.decode(errors="surrogateescape")


def _git_ok(repo: Path, *args: str) -> bool:
    return _git_run(repo, *args).returncode == 0


def _git_top(path: Path) -> Path | None:
    """The top of the git work tree holding `path`, unless git ignores `path` there (a
    tree unpacked inside someone's repository is a plain folder)."""
    if shutil.which("git") is None:
        return None
    proc = _git_run(path, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        return None
    top = Path(proc.stdout.decode().strip())
    if path != top and _git_ok(top, "check-ignore", "-q", str(path)):
        return None
    return top


def _prefix(path: Path, top: Path) -> str:
    """`path` inside its repository, as git names a subfolder ("" or "sub/dir/")."""
    rel = os.path.relpath(path, top)
    return "" if rel == "." else rel.rstrip("/") + "/"


def _commit_of(repo: Path, path: Path, rev: str, head: str) -> str:
    proc = _git_run(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if proc.returncode != 0:
        raise UserError(
            f"{head}: the git repository at {repo} has no commit {rev!r} (a branch, tag or "
            f"commit id; `git -C {path} log --oneline` lists them)"
        )
    return proc.stdout.decode().strip()


# -- a range of commits (tlsbench bisect) ---------------------------------------------------


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


@dataclass(frozen=True)
class CommitRange:
    """GOOD and the commits after it up to BAD, along BAD's first parents (as `git bisect
    --first-parent` walks): a merge is one step, the branch it merged is not searched."""

    repo: Path  # the top of the git work tree
    good: Commit
    commits: tuple[Commit, ...]  # oldest first; the last is BAD
    dirty: bool  # the work tree has uncommitted changes (the commits are what is built)


def library_at(path: Path, sha: str) -> str:
    """The library the tree at `path` holds at commit `sha` ("" when none is recognised)."""
    repo = _git_top(path)
    return detect(_CommitReader(repo, sha, _prefix(path, repo))) if repo is not None else ""


def commit_range(path: Path, good: str, bad: str) -> CommitRange:
    """The commits from `good` (excluded) to `bad` of the repository holding `path`,
    checked: both commits exist, GOOD is an ancestor of BAD, and they differ."""
    repo = _git_top(path)
    if repo is None:
        raise UserError(f"{path} is not in a git repository: bisect searches the commits of "
                        "one; give LIBRARY@TREE#GOOD with TREE a git clone")  # fmt: skip
    good_sha = _commit_of(repo, path, good, f"GOOD ({good})")
    bad_sha = _commit_of(repo, path, bad, f"BAD ({bad})")
    if good_sha == bad_sha:
        raise UserError(f"GOOD ({good}) and BAD ({bad}) are the same commit {good_sha[:12]}: "
                        "nothing lies between them")  # fmt: skip
    if not _git_ok(repo, "merge-base", "--is-ancestor", good_sha, bad_sha):
        hint = (
            " (BAD is an ancestor of GOOD: swap them)"
            if _git_ok(repo, "merge-base", "--is-ancestor", bad_sha, good_sha)
            else ""
        )
        raise UserError(
            f"GOOD ({good}, {good_sha[:12]}) is not an ancestor of BAD ({bad}, {bad_sha[:12]})"
            f"{hint}; bisect searches the commits that lead from GOOD to BAD "
            f"(`git -C {repo} log --oneline --ancestry-path {good}..{bad}`)"
        )  # fmt: skip
    listing = _git(repo, "log", "--first-parent", "--ancestry-path", "--reverse",
                   "--format=%H%x1f%s", f"{good_sha}..{bad_sha}")  # fmt: skip
    commits = tuple(Commit(*line.split("\x1f", 1)) for line in listing.splitlines() if line)
    if not commits or commits[-1].sha != bad_sha:
        raise UserError(f"BAD ({bad}) is not reached from GOOD ({good}) along its first "
                        "parents; name a GOOD on BAD's own line of history")  # fmt: skip
    subject = _git(repo, "log", "-1", "--format=%s", good_sha).strip()
    status = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return CommitRange(repo, Commit(good_sha, subject), commits, bool(status.strip()))


# -- local sources --------------------------------------------------------------------------

_SNAPSHOTS: dict[tuple[str, str | None], Snapshot] = {}


def forget_snapshots() -> None:
    """Reads every tree afresh on next use (a process that edits trees between builds)."""
    _SNAPSHOTS.clear()


@dataclass(frozen=True)
class LocalSource:
    library: str
    path: Path  # absolute
    rev: str | None  # a git revision, or None: the tree as it is

    @property
    def spec(self) -> str:
        """The canonical line name: LIBRARY@ABSOLUTE_PATH[#REV]."""
        return f"{self.library}@{self.path}" + (f"#{self.rev}" if self.rev else "")

    def snapshot(self) -> Snapshot:
        """What the source is, read once per process (see the module's docstring)."""
        memo = (str(self.path), self.rev)
        if memo not in _SNAPSHOTS:
            _SNAPSHOTS[memo] = self._read()
        return _SNAPSHOTS[memo]

    def _read(self) -> Snapshot:
        top = _git_top(self.path)
        if top is None:
            digest = _digest(self.path, _folder_files(self.path))
            return Snapshot("tree", str(self.path), None, None, None, digest, None)
        prefix = _prefix(self.path, top)
        if self.rev is not None:
            commit = _commit_of(top, self.path, self.rev, self.spec)
            tree = _git(top, "rev-parse", f"{commit}:{prefix}" if prefix
                        else f"{commit}^{{tree}}").strip()  # fmt: skip
            missing = tuple(p for p, sha, sub in _submodules(top, tree, self.path)
                            if not _has_commit(sub, sha))  # fmt: skip
            return Snapshot("commit", str(self.path), self.rev, commit, tree, None, False,
                            missing)  # fmt: skip
        head_proc = _git_run(top, "rev-parse", "--verify", "--quiet", "HEAD")
        head = head_proc.stdout.decode().strip() if head_proc.returncode == 0 else None
        status = _git(self.path, "status", "--porcelain", "-z", "--untracked-files=all",
                      "--ignore-submodules=none", "--", ".")  # fmt: skip
        if head is not None and not status:
            tree = _git(top, "rev-parse", f"HEAD:{prefix}" if prefix else "HEAD^{tree}").strip()
            missing = tuple(p for p, sha, sub in _submodules(top, tree, self.path)
                            if not _has_commit(sub, sha))  # fmt: skip
            return Snapshot("worktree", str(self.path), None, head, tree, None, False, missing)
        files, missing_list = _worktree_files(self.path)
        return Snapshot("worktree", str(self.path), None, head, None,
                        _digest(self.path, files), True, tuple(missing_list))  # fmt: skip

    def export(self, root: Path) -> Path:
        """The snapshot's content as a folder under `root` (the cache's src/), made once per
        content and shared by every build of it; the user's tree is only read."""
        snap = self.snapshot()
        dest = root / f"local-{self.library}-{snap.content_id[:16]}"
        done = dest / EXPORT_MARKER
        if done.exists() and done.read_text() == snap.content_id:
            return dest
        root.mkdir(parents=True, exist_ok=True)
        with (root / f".{dest.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if done.exists() and done.read_text() == snap.content_id:
                return dest
            tmp = dest.with_name(dest.name + f".tmp-{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            try:
                self._export_into(snap, tmp)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            (tmp / EXPORT_MARKER).write_text(snap.content_id)
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
        return dest

    def _export_into(self, snap: Snapshot, dest: Path) -> None:
        if snap.tree is not None:  # a commit's tree (#REV, or a clean work tree)
            top = _git_top(self.path)
            assert top is not None
            _archive(top, snap.tree, dest)
            for rel, sha, sub in _submodules(top, snap.tree, self.path):
                if sub is not None and _has_commit(sub, sha):
                    (dest / rel).mkdir(parents=True, exist_ok=True)
                    _archive(sub, sha, dest / rel)
            return
        files = (_folder_files(self.path) if snap.kind == "tree"
                 else _worktree_files(self.path)[0])  # fmt: skip
        copied = _digest(self.path, files, copy_to=dest)
        if copied != snap.sha256:
            raise UserError(
                f"{self.path} changed while tlsbench copied it (its files hash to "
                f"{copied[:12]}, not {str(snap.sha256)[:12]} as read before); run again "
                "once the tree is still",
                exit_code=1,
            )


def _has_commit(repo: Path | None, sha: str) -> bool:
    return repo is not None and _git_ok(repo, "cat-file", "-e", f"{sha}^{{commit}}")


def _submodules(top: Path, tree: str, path: Path) -> Iterator[tuple[str, str, Path | None]]:
    """(path in the tree, commit, the submodule's checked-out repository or None) of each
    submodule (gitlink) of `tree`, nested ones included where they are checked out."""
    listing = _git(top, "ls-tree", "-r", "-z", tree)
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, _, rel = entry.partition("\t")
        mode, kind, sha = meta.split()
        if mode != GITLINK_MODE or kind != "commit":
            continue
        sub = path / rel
        repo = sub if (sub / ".git").exists() else None
        yield rel, sha, repo
        if repo is not None and _has_commit(repo, sha):
            nested_tree = _git(repo, "rev-parse", f"{sha}^{{tree}}").strip()
            for nested, nested_sha, nested_repo in _submodules(repo, nested_tree, sub):
                yield f"{rel}/{nested}", nested_sha, nested_repo


def _archive(repo: Path, treeish: str, dest: Path) -> None:
    """`git archive` of a commit or tree, unpacked into `dest` as it streams."""
    env = {**os.environ, "LC_ALL": "C"}
    with subprocess.Popen(
        ["git", "-C", str(repo), "archive", "--format=tar", treeish],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                tar.extractall(dest, filter="tar")
        except (tarfile.TarError, OSError) as exc:
            proc.kill()
            raise UserError(f"git archive {treeish} in {repo}: {exc}", exit_code=1) from exc
        error = proc.stderr.read().decode(errors="replace").strip()
    if proc.returncode != 0:
        raise UserError(f"git archive {treeish} in {repo} failed: {error}", exit_code=1)


# -- files of a tree ------------------------------------------------------------------------


def _ignored(name: str) -> bool:
    return name in IGNORED_FILES or name.endswith(IGNORED_SUFFIXES) or ".so." in name


def _folder_files(root: Path) -> list[str]:
    """The files of a folder outside git, relative, sorted; build outputs left out."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        links = [d for d in dirs if Path(folder, d).is_symlink()]  # kept as links
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and d not in links)
        found += [name if rel == "." else f"{rel}/{name}"
                  for name in [*files, *links] if not _ignored(name)]  # fmt: skip
    return sorted(found)


def _worktree_files(root: Path, prefix: str = "") -> tuple[list[str], list[str]]:
    """The files of a git work tree git does not ignore (tracked and untracked), as they
    are on disk, in its checked-out submodules too; and the submodules that are not there."""
    listing = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                   "--stage")  # fmt: skip
    files: list[str] = []
    missing: list[str] = []
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, tab, rel = entry.partition("\t")
        if not tab:  # untracked files come without stage information
            meta, rel = "", entry
        if meta.startswith(GITLINK_MODE):
            sub = root / rel
            if (sub / ".git").exists():
                sub_files, sub_missing = _worktree_files(sub, f"{prefix}{rel}/")
                files += sub_files
                missing += sub_missing
            else:
                missing.append(f"{prefix}{rel}")
            continue
        if (root / rel).is_symlink() or (root / rel).is_file():  # deleted files are gone
            files.append(f"{prefix}{rel}")
    return sorted(set(files)), missing


def _digest(root: Path, files: list[str], copy_to: Path | None = None) -> str:
    """sha256 over each file's path, kind (file, executable, symlink) and content; with
    `copy_to`, each file is also written there from the same bytes that were hashed."""
    digest = hashlib.sha256()
    for rel in files:
        source = root / rel
        if source.is_symlink():
            kind, content = b"l", os.readlink(source).encode(errors="surrogateescape")
        else:
            try:
                content = source.read_bytes()
                mode = source.stat().st_mode
            except OSError as exc:
                raise UserError(f"cannot read {source}: {exc.strerror or exc}",
                                exit_code=1) from exc  # fmt: skip
            kind = b"x" if mode & 0o111 else b"f"
        encoded = rel.encode(errors="surrogateescape")
        digest.update(len(encoded).to_bytes(8, "big") + encoded + kind)
        digest.update(len(content).to_bytes(8, "big") + content)
        if copy_to is not None:
            _write(copy_to / rel, kind, content)
    return digest.hexdigest()


def _write(target: Path, kind: bytes, content: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == b"l":
        os.symlink(content.decode(errors="surrogateescape"), target)
        return
    target.write_bytes(content)
    target.chmod(0o755 if kind == b"x" else 0o644)
