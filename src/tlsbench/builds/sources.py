"""Pinned library sources: Debian source packages and crate archives, hash-checked.

Debian sources come through a project-private apt setup: the machine's apt configuration is
never touched; apt runs with its etc, state and cache folders under the tlsbench cache, and
reads only `sources/debian-src.list`. Only the upstream `.orig` archive is used (Debian's
patches are not applied).

Crate archives (`kind = "crate"`, for libraries Debian does not ship or no longer ships, whose
C sources a crate bundles) are fetched with cargo into a private CARGO_HOME under the cache
(or, with no cargo installed, straight from crates.io's sparse index, checked against the
index's checksum); the registry checks them against its index, and tlsbench against the pin.

Either way the archive is checked against the sha256 pinned in `sources/pins.toml` before
anything unpacks it.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import tarfile
import tomllib
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

from tlsbench.core import paths
from tlsbench.core.errors import UserError, read_user_file

PIN_KINDS = ("debian", "crate")

# apt's lists are refreshed when older than this, or when a pinned version is not found.
APT_LISTS_MAX_AGE_S = 24 * 3600

# crates.io's sparse index and download endpoint (used when no cargo is installed).
CRATES_INDEX = "https://index.crates.io"
CRATES_DOWNLOAD = "https://static.crates.io/crates"


@dataclass(frozen=True)
class Pin:
    line: str  # what a variant names, e.g. "openssl-3.5.x"
    library: str  # "openssl"
    package: str  # Debian source package, e.g. "openssl"
    upstream: str  # exact upstream release, e.g. "3.5.7"
    file: str  # the .orig archive's (or the .crate's) file name
    sha256: str
    kind: str = "debian"  # "debian" (source package) or "crate" (crates.io archive)
    subdir: str = ""  # the library's tree inside the archive, e.g. "openssl" in a crate
    release: str = ""  # the library's own release when `upstream` does not carry it
    # Pins of archives the line's build needs beside its own (NSS needs NSPR's): they are
    # no lines of their own, and their hashes are part of the line's build key.
    with_: tuple[str, ...] = ()

    @property
    def library_version(self) -> str:
        """The library's own release: a crate's version carries it as build metadata
        (openssl-src 111.28.2+1.1.1w bundles OpenSSL 1.1.1w), or the pin's `version` says it
        (aws-lc-sys 0.47.0 bundles AWS-LC 5.12.0)."""
        if self.release:
            return self.release
        if self.kind == "crate" and "+" in self.upstream:
            return self.upstream.split("+", 1)[1]
        return self.upstream


def load_pins(pins_file: Path | None = None) -> dict[str, Pin]:
    pins_file = pins_file or paths.PINS_FILE
    try:
        data = tomllib.loads(read_user_file(pins_file))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{pins_file}: {exc}") from exc
    pins = {}
    for line, entry in data.items():
        if not isinstance(entry, dict):
            raise UserError(f'{pins_file}: pin ["{line}"] must be a table, not {entry!r}')
        missing = {"package", "upstream", "file", "sha256"} - entry.keys()
        if missing:
            raise UserError(f"{pins_file}: pin [{line}] lacks {', '.join(sorted(missing))}")
        for key in ("package", "upstream", "file", "sha256"):
            if not isinstance(entry[key], str) or not entry[key].strip():
                raise UserError(
                    f"{pins_file}: pin [{line}] {key} must be a non-empty string, "
                    f"not {entry[key]!r}"
                )
        if not re.fullmatch(r"[0-9a-fA-F]{64}", entry["sha256"]):
            raise UserError(
                f"{pins_file}: pin [{line}] sha256 must be 64 hexadecimal digits, "
                f"not {entry['sha256']!r}"
            )
        kind = entry.get("kind", "debian")
        if kind not in PIN_KINDS:
            raise UserError(
                f"{pins_file}: pin [{line}] kind must be one of {', '.join(PIN_KINDS)}, "
                f"not {kind!r}"
            )
        subdir = entry.get("subdir", "")
        if not isinstance(subdir, str) or ".." in subdir.split("/") or subdir.startswith("/"):
            raise UserError(
                f"{pins_file}: pin [{line}] subdir must be a relative folder inside the "
                f"archive, not {subdir!r}"
            )
        for key in ("library", "version"):  # optional
            if key in entry and (not isinstance(entry[key], str) or not entry[key].strip()):
                raise UserError(
                    f"{pins_file}: pin [{line}] {key} must be a non-empty string, "
                    f"not {entry[key]!r}"
                )
        with_ = entry.get("with", [])
        if not isinstance(with_, list) or not all(isinstance(w, str) and w for w in with_):
            raise UserError(
                f"{pins_file}: pin [{line}] with must be a list of pinned lines, not {with_!r}"
            )
        pins[line] = Pin(
            line=line,
            # The line's first word, unless the pin names the library (aws-lc-5.12.0: awslc).
            library=entry.get("library", line.split("-", 1)[0]),
            package=entry["package"],
            upstream=entry["upstream"],
            file=entry["file"],
            sha256=entry["sha256"].lower(),
            kind=kind,
            subdir=subdir,
            release=entry.get("version", ""),
            with_=tuple(with_),
        )
    for pin in pins.values():
        for other in pin.with_:
            if other not in pins or other == pin.line:
                raise UserError(
                    f"{pins_file}: pin [{pin.line}] with names {other!r}, which is not another pin"
                )
    return pins


def companion_lines(pins: dict[str, Pin]) -> set[str]:
    """The pins another pin's build takes along (`with`): no lines of their own."""
    return {other for pin in pins.values() for other in pin.with_}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def upstream_of(debian_version: str) -> str:
    """'1:3.5.7-1~deb13u2' -> '3.5.7' (epoch and Debian revision removed)."""
    version = debian_version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


class Apt:
    """apt-get / apt-cache confined to a private configuration under the cache."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.etc = root / "etc"
        self.state = root / "state"
        self.cache = root / "cache"

    def _options(self) -> list[str]:
        return [
            "-o", f"Dir::Etc={self.etc}",
            "-o", f"Dir::Etc::SourceList={self.etc / 'sources.list'}",
            "-o", f"Dir::Etc::SourceParts={self.etc / 'sources.list.d'}",
            "-o", f"Dir::Etc::Preferences={self.etc / 'preferences'}",
            "-o", f"Dir::Etc::PreferencesParts={self.etc / 'preferences.d'}",
            "-o", f"Dir::State={self.state}",
            "-o", f"Dir::State::Status={self.state / 'status'}",
            "-o", f"Dir::Cache={self.cache}",
            "-o", "APT::Sandbox::User=root",
            "-o", "Debug::NoLocking=1",
        ]  # fmt: skip

    def _prepare(self) -> None:
        for folder in (
            self.etc / "sources.list.d",
            self.etc / "preferences.d",
            self.state / "lists" / "partial",
            self.cache / "archives" / "partial",
        ):
            folder.mkdir(parents=True, exist_ok=True)
        (self.state / "status").touch()
        wanted = paths.APT_SOURCES_LIST.read_text()
        current = self.etc / "sources.list"
        if not current.exists() or current.read_text() != wanted:
            current.write_text(wanted)
            # A changed source list makes the old indexes stale.
            for stale in (self.state / "lists").glob("*Sources*"):
                stale.unlink()

    def _run(self, tool: str, *args: str) -> str:
        if shutil.which(tool) is None:
            raise UserError(f"{tool} is not installed; tlsbench fetches sources through apt")
        proc = subprocess.run(
            [tool, *self._options(), *args], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise UserError(f"{tool} {' '.join(args)} failed:\n{proc.stderr.strip()}", exit_code=1)
        return proc.stdout

    def lists_fresh(self) -> bool:
        lists = list((self.state / "lists").glob("*Sources"))
        if not lists:
            return False
        age = _dt.datetime.now().timestamp() - min(p.stat().st_mtime for p in lists)
        return age < APT_LISTS_MAX_AGE_S

    def update(self, force: bool = False) -> None:
        self._prepare()
        if force or not self.lists_fresh():
            self._run("apt-get", "update", "-q")

    def offered_versions(self, package: str) -> list[str]:
        """Debian versions of a source package the configured suites offer."""
        self._prepare()
        out = self._run("apt-cache", "showsrc", "--only-source", package)
        versions = re.findall(r"^Version: (\S+)$", out, flags=re.M)
        return sorted(set(versions), key=_version_key)

    def uris(self, package: str, debian_version: str) -> dict[str, tuple[str, str]]:
        """file name -> (URL, sha256) of one source package version, from apt's index."""
        out = self._run("apt-get", "source", "--print-uris", f"{package}={debian_version}")
        found = {}
        for url, name, _size, checksum in re.findall(
            r"^'(\S+)' (\S+) (\d+) (?:SHA256:)?(\S+)$", out, flags=re.M
        ):
            found[name] = (url, checksum.lower())
        return found


UNPACKED_MARKER = ".tlsbench-unpacked"


def extract_complete(archive: Path, dest: Path) -> None:
    """Extracts a tar archive, failing on any error instead of stopping early.

    tarfile ends its member list silently at the first block that is not a valid header,
    so a corrupt archive would yield a truncated tree. After the last member, the rest of
    the (decompressed) stream must be the archive's zero padding; reading it to the end
    also makes the decompressor check its own CRC.
    """
    try:
        with tarfile.open(archive, errorlevel=2) as tar:
            tar.extractall(dest, filter="tar")
            fileobj = tar.fileobj
            assert fileobj is not None
            while block := fileobj.read(1 << 20):
                if block.strip(b"\0"):
                    raise tarfile.ReadError("data after the last valid member (corrupt header)")
    except (tarfile.TarError, OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise UserError(
            f"could not unpack {archive.name} completely: {exc}. The tree was discarded; "
            "delete the archive to fetch it again.",
            exit_code=1,
        ) from exc


def _version_key(version: str) -> list[tuple[int, str]]:
    return [(int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"[.\-+~:]", version)]


class Sources:
    """Fetches, verifies and unpacks pinned archives under the cache."""

    def __init__(self, cache: Path | None = None, pins: dict[str, Pin] | None = None) -> None:
        self.cache = cache or paths.cache_root()
        self.pins = pins if pins is not None else load_pins()
        self.apt = Apt(self.cache / "apt")
        self.archives = self.cache / "archives"
        self.unpacked = self.cache / "src"

    def pin(self, line: str) -> Pin:
        try:
            return self.pins[line]
        except KeyError:
            raise UserError(
                f"no pinned source for {line!r}; pinned: {', '.join(sorted(self.pins))}"
            ) from None

    # -- fetching ---------------------------------------------------------------------------

    def _debian_version_for(self, package: str, upstream: str, line: str) -> str:
        for attempt in range(2):
            self.apt.update(force=attempt == 1)
            offered = self.apt.offered_versions(package)
            matching = [v for v in offered if upstream_of(v) == upstream]
            if matching:
                return matching[-1]
        offered_upstream = sorted({upstream_of(v) for v in offered}, key=_version_key)
        raise UserError(
            f"{package} {upstream} (pinned for {line}) is no longer offered by the Debian "
            f"suites in {paths.APT_SOURCES_LIST.name}.\n"
            f"Offered upstream versions of {package}: {', '.join(offered_upstream) or 'none'}.\n"
            f"Move the pin with: ./tlsbench sources repin {line} VERSION",
            exit_code=1,
        )

    def _download(self, url: str, dest: Path, package: str, version: str) -> None:
        tmp = dest.with_name(dest.name + f".part-{os.getpid()}")
        try:
            with urllib.request.urlopen(url, timeout=120) as response, tmp.open("wb") as out:
                shutil.copyfileobj(response, out, 1 << 20)
        except (urllib.error.URLError, OSError) as exc:
            tmp.unlink(missing_ok=True)
            raise UserError(
                f"could not fetch the source package {package} {version} ({url}): {exc}",
                exit_code=1,
            ) from exc
        tmp.rename(dest)

    def archive(self, line: str) -> Path:
        """The verified .orig archive of a pin, downloaded on first use."""
        pin = self.pin(line)
        self.archives.mkdir(parents=True, exist_ok=True)
        path = self.archives / pin.file
        if not path.exists() and pin.kind == "crate":
            self._fetch_crate(pin, path)
        elif not path.exists():
            debian_version = self._debian_version_for(pin.package, pin.upstream, line)
            uris = self.apt.uris(pin.package, debian_version)
            if pin.file not in uris:
                raise UserError(
                    f"{pin.package} {debian_version} has no file {pin.file}; it ships "
                    f"{', '.join(sorted(uris))}. Fix the pin in {paths.PINS_FILE.name}.",
                    exit_code=1,
                )
            self._download(uris[pin.file][0], path, pin.package, debian_version)
        self.verify(path, pin)
        return path

    def _fetch_crate(self, pin: Pin, dest: Path) -> None:
        """Fetches one crate archive with cargo (which checks it against the registry index).

        cargo fetches through a throw-away manifest that depends on exactly the pinned
        version, with its own CARGO_HOME under the cache so the user's is never touched.
        """
        if shutil.which("cargo") is None:
            # Debian 12's cargo (0.66) reads the registry index only through git, which is
            # not reachable here; without a cargo on PATH, fetch as cargo would over the
            # sparse index.
            self._fetch_crate_from_registry(pin, dest)
            return
        home = self.cache / "cargo"
        project = home / "fetch" / pin.file.removesuffix(".crate")
        project.mkdir(parents=True, exist_ok=True)
        version = pin.upstream.split("+", 1)[0]  # cargo ignores build metadata in requirements
        (project / "Cargo.toml").write_text(
            '[package]\nname = "tlsbench-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
            '[lib]\npath = "lib.rs"\n\n'
            f'[dependencies]\n{pin.package} = "={version}"\n'
        )
        (project / "lib.rs").write_text("")
        proc = subprocess.run(
            ["cargo", "fetch", "--manifest-path", str(project / "Cargo.toml")],
            env={**os.environ, "CARGO_HOME": str(home / "home")},
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise UserError(
                f"could not fetch the crate {pin.package} {pin.upstream} (pinned for "
                f"{pin.line}):\n{proc.stderr.strip()}",
                exit_code=1,
            )
        found = sorted((home / "home" / "registry" / "cache").glob(f"*/{pin.file}"))
        if not found:
            raise UserError(
                f"cargo fetched {pin.package} ={version} but no {pin.file} appeared; fix the "
                f"pin's file in {paths.PINS_FILE.name}",
                exit_code=1,
            )
        tmp = dest.with_name(dest.name + f".part-{os.getpid()}")
        shutil.copyfile(found[0], tmp)
        tmp.rename(dest)

    def _fetch_crate_from_registry(self, pin: Pin, dest: Path) -> None:
        """Fetches one crate archive from crates.io's sparse index and download endpoint.

        The index entry's checksum must equal the pin (else the pin is wrong for that
        version, and the message says so), and `archive` then hashes the file itself.
        """
        import json

        name = pin.package.lower()
        prefix = (
            f"{len(name)}/{name}"
            if len(name) <= 2
            else f"3/{name[0]}/{name}"
            if len(name) == 3
            else f"{name[:2]}/{name[2:4]}/{name}"
        )
        version = pin.upstream
        try:
            with urllib.request.urlopen(f"{CRATES_INDEX}/{prefix}", timeout=60) as response:
                entries = [json.loads(line) for line in response.read().splitlines() if line]
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise UserError(
                f"could not read the crates.io index entry of {pin.package} (pinned for "
                f"{pin.line}): {exc}; check the network, or install a current cargo",
                exit_code=1,
            ) from exc
        entry = next((e for e in entries if e.get("vers") == version), None)
        if entry is None:
            raise UserError(
                f"crates.io has no {pin.package} {version} (pinned for {pin.line}); fix the "
                f"pin in {paths.PINS_FILE.name}",
                exit_code=1,
            )
        if entry.get("cksum") != pin.sha256:
            raise UserError(
                f"the crates.io index gives {pin.package} {version} the sha256 "
                f"{entry.get('cksum')}, but {paths.PINS_FILE.name} pins {pin.sha256}; "
                "fix the pin",
                exit_code=1,
            )
        url = f"{CRATES_DOWNLOAD}/{pin.package}/{pin.package}-{version}.crate"
        self._download(url, dest, pin.package, version)

    def verify(self, path: Path, pin: Pin) -> None:
        """Hashes the archive in full against the pinned sha256.

        No stamp of size and mtime stands in for the hash: a byte changed in place keeps
        both, and the cost (well under a second per archive) is paid only when a tree is
        unpacked or the archive is fetched.
        """
        actual = sha256_of(path)
        if actual != pin.sha256:
            raise UserError(
                f"sha256 mismatch for {path.name} ({path}):\n"
                f"  expected {pin.sha256} (sources/pins.toml [{pin.line}])\n"
                f"  actual   {actual}\n"
                "The archive is not the pinned source; it was not unpacked. Delete it to "
                "fetch it again, or move the pin with ./tlsbench sources repin.",
                exit_code=1,
            )

    # -- unpacking --------------------------------------------------------------------------

    def source_dir(self, line: str) -> Path:
        """The unpacked upstream tree of a pin (read-only by convention: builds are out of tree).

        A tree counts as unpacked only when its marker names the pinned sha256; the marker
        is written after the whole archive was hashed and extracted without error, and the
        folder is renamed into place only then.
        """
        pin = self.pin(line)
        dest = self.unpacked / f"{line}-{pin.sha256[:12]}"
        done = dest / UNPACKED_MARKER
        if done.exists() and done.read_text() == pin.sha256:
            return self._library_dir(dest, pin)
        # One unpacker per tree: builds of two variants of a line run at once (other cache
        # keys), and a second unpack must not replace the tree the first one builds from.
        self.unpacked.mkdir(parents=True, exist_ok=True)
        with (self.unpacked / f".{dest.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if done.exists() and done.read_text() == pin.sha256:
                return self._library_dir(dest, pin)
            return self._unpack(line, pin, dest)

    def _unpack(self, line: str, pin: Pin, dest: Path) -> Path:
        archive = self.archive(line)  # hashed in full here
        tmp = dest.with_name(dest.name + f".tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            extract_complete(archive, tmp)
        except UserError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        (tmp / UNPACKED_MARKER).write_text(pin.sha256)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        return self._library_dir(dest, pin)

    def _library_dir(self, dest: Path, pin: Pin) -> Path:
        top = self._top_dir(dest)
        if not pin.subdir:
            return top
        tree = top / pin.subdir
        if not tree.is_dir():
            raise UserError(
                f"{pin.file} has no folder {pin.subdir!r}; fix the pin's subdir in "
                f"{paths.PINS_FILE.name}",
                exit_code=1,
            )
        return tree

    @staticmethod
    def _top_dir(dest: Path) -> Path:
        tops = [p for p in dest.iterdir() if p.is_dir()]
        return tops[0] if len(tops) == 1 else dest

    # -- moving a pin -----------------------------------------------------------------------

    def repin(self, line: str, upstream: str) -> Pin:
        """Moves a pin to another upstream version offered by the suites, and records it."""
        old = self.pin(line)
        if old.kind == "crate":
            raise UserError(
                f"{line} is a crate archive ({old.package} {old.upstream}); move it by editing "
                f"its version, file and sha256 (from Cargo.lock) in {paths.PINS_FILE.name}"
            )
        debian_version = self._debian_version_for(old.package, upstream, line)
        uris = self.apt.uris(old.package, debian_version)
        origs = [n for n in uris if ".orig." in n and not n.endswith(".asc")]
        if len(origs) != 1:
            raise UserError(
                f"{old.package} {debian_version}: expected one .orig archive, found {origs}",
                exit_code=1,
            )
        name = origs[0]
        url, apt_sha256 = uris[name]
        path = self.archives / name
        self.archives.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            self._download(url, path, old.package, debian_version)
        actual = sha256_of(path)
        if actual != apt_sha256:
            path.unlink()
            raise UserError(
                f"{name}: sha256 {actual} differs from apt's signed index ({apt_sha256})",
                exit_code=1,
            )
        new = Pin(line, old.library, old.package, upstream, name, actual)
        _rewrite_pin(paths.PINS_FILE, new)
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with paths.PIN_MOVES_LOG.open("a") as log:
            log.write(
                f"{stamp} {line}: {old.upstream} ({old.sha256}) -> {upstream} ({actual}) "
                f"from Debian {old.package} {debian_version}\n"
            )
        self.pins[line] = new
        return new


def _rewrite_pin(pins_file: Path, pin: Pin) -> None:
    """Replaces one [section]'s upstream / file / sha256 in place, keeping comments."""
    text = pins_file.read_text()
    section = re.search(rf'^\["{re.escape(pin.line)}"\]\n(?:(?!\[).*\n?)*', text, flags=re.M)
    if section is None:
        raise UserError(f'{pins_file}: no section ["{pin.line}"]')
    body = section.group(0)
    for key, value in (("upstream", pin.upstream), ("file", pin.file), ("sha256", pin.sha256)):
        body = re.sub(rf'^{key} = ".*"$', f'{key} = "{value}"', body, flags=re.M)
    tmp = pins_file.with_suffix(".tmp")
    tmp.write_text(text[: section.start()] + body + text[section.end() :])
    tmp.replace(pins_file)
