"""Builds of variants, cached under a key made of everything that goes into them.

Cache layout (under `paths.cache_root()/builds`):

    <line>-<key16>/               one library build (renamed into place when complete)
        prefix/                   installed headers and static libraries
        build.log  manifest.json  variant.cmake
        drivers-<dkey16>/         the probe and driver programs built against it
            bin/  probe.json  build.log

The library key hashes the source archive's sha256 (or the system package version, or a
local source's content: a git tree id or a digest of its files), the resolved options, the
compiler and its version, the arch, the recipe's own source and the tool versions it
declares. The drivers key adds the drivers/ tree and cmake's version,
so editing a driver never rebuilds a library.
"""

from __future__ import annotations

import ast
import contextlib
import datetime as _dt
import fcntl
import functools
import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches, certs, firmware, localsource
from tlsbench.builds.recipes import recipe_for
from tlsbench.builds.recipes.base import BaseBuild, BuildContext, BuildLog, LinkInfo, tool_version
from tlsbench.builds.sources import Sources
from tlsbench.builds.variants import Catalog, Variant
from tlsbench.core import paths, progress
from tlsbench.core.errors import BuildError, UserError

MANIFEST = "manifest.json"
# The flags of a compile command that shape the code (optimisation, target, code
# generation, debug info, assertions); include paths, warnings and dependency files do not.
CODEGEN_FLAG = re.compile(r"-(O\S*|m\S+|f\S+|g\S*|DNDEBUG|D_FORTIFY_SOURCE=\S*|std=\S+)")
# Code-generation flags that only name paths or tune messages.
NOT_CODEGEN = ("-fdiagnostics", "-fmessage-length", "-fdebug-prefix-map", "-ffile-prefix-map",
               "-fmacro-prefix-map", "-fcolor-diagnostics")  # fmt: skip
# Compiles of the build system's own probes (autoconf's conftest.c, CMake's try-compiles and
# compiler identification), not of the library.
PROBE_COMPILE = re.compile(r"conftest|CMakeScratch|CMakeTmp|TryCompile|CompilerId")
COMPILER = os.environ.get("TLSBENCH_CC", "gcc")


@dataclass
class Build:
    """A completed build of one variant, with its drivers."""

    variant: Variant
    key: str
    folder: Path
    manifest: dict[str, Any]
    drivers_folder: Path

    def program(self, name: str) -> Path:
        return self.drivers_folder / "bin" / name

    def command(self, name: str) -> list[str]:
        """How to run one of the variant's programs here (under qemu-user for armhf)."""
        return [*arches.arch(self.variant.arch).run_prefix(), str(self.program(name))]

    @property
    def timing(self) -> bool:
        """Whether the driver's clocks mean anything for this build (not under emulation)."""
        return arches.arch(self.variant.arch).timing

    def info(self) -> dict[str, Any]:
        """The driver's `info` object: what the library reports it supports (TLS versions,
        suites, ...; `no_tls` names why a build has no TLS at all)."""
        proc = subprocess.run([*self.command("tlsbench-driver"), "info", "--json"],
                              capture_output=True, text=True, check=False)  # fmt: skip
        try:
            return dict(json.loads(proc.stdout)["info"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise UserError(
                f"{self.program('tlsbench-driver')} info --json gave no info object ({exc}); "
                f"its stderr: {proc.stderr.strip()[-300:]}",
                1,
            ) from exc

    def describe(self) -> dict[str, Any]:
        """What `tlsbench build --json` prints for this variant."""
        probe_file = self.drivers_folder / "probe.json"
        return {
            "name": self.variant.name,
            "library": self.variant.library,
            "version": self.manifest["version"],
            "line": self.variant.line.name,
            "features": list(self.variant.features),
            "options": self.variant.options(),
            "cache_key": self.key,
            # The driver programs' own key (drivers/ sources, cmake): a resume checks it too.
            "drivers_key": self.drivers_folder.name.removeprefix("drivers-"),
            "folder": str(self.folder),
            "library_files": self.manifest["link"]["library_files"],
            "compiler": self.manifest["inputs"]["compiler"],
            # Where the code came from: a pinned archive and its hash, or a local tree or
            # commit (path, commit, tree id or digest, dirty). A local build is shared by
            # every path and name of its content: this variant's own, not the manifest's
            # (the first to build it).
            "source": self.variant.line.local.snapshot().describe()
            if self.variant.line.local is not None
            else self.manifest.get("source"),
            "build_facts": self.manifest.get("build_facts"),
            # The variant's own config files, whole (a report shows them), and the
            # platform macros of theirs the build replaced (platform.py).
            **(
                {
                    "config_files": [f.describe() for f in self.variant.files],
                    "platform_replaced": list(self.variant.replaced),
                }
                if self.variant.files
                else {}
            ),
            # The flags the library's compiles really used, as its build system passed them
            # (None: built before tlsbench recorded them, or by a build without C compiles).
            "compile_flags": self.manifest.get("compile_flags"),
            "build_seconds": self.manifest["build_seconds"],
            "probe": json.loads(probe_file.read_text()),
        }


def _recording_compiler(cc: str, work: Path) -> tuple[str, Path]:
    """A stand-in for the C compiler that appends each command line to a log and then runs
    the real one: the flags a library's build system really passed, whatever it is (CMake,
    autotools, OpenSSL's Configure). It observes only, so it is not part of the build key.
    It has the compiler's own name and its folder comes first on PATH, so that a compiler
    named without a path keeps that name in what the build records of itself (OpenSSL's
    `compiler:` line); one named by its path is replaced by the stand-in's path."""
    real = shutil.which(cc) or cc
    folder = work / "cc-record"
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / Path(real).name  # the same name: build systems look at it
    log = work / "compile-commands.log"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$*\" >> {shlex.quote(str(log))}\n"
        f'exec {shlex.quote(real)} "$@"\n'
    )
    wrapper.chmod(0o755)
    return (str(wrapper) if os.path.isabs(cc) else cc), log


def _compile_flags(log: Path) -> dict[str, Any] | None:
    """How many compiles (`-c`) the build ran, and how many of them used each code-shaping
    flag; None when it compiled no C through the compiler it was given (cargo builds)."""
    if not log.exists():
        return None
    compiles = 0
    counts: dict[str, int] = {}
    for line in log.read_text(errors="replace").splitlines():
        args = line.split()
        if "-c" not in args or PROBE_COMPILE.search(line):
            continue
        compiles += 1
        # Of several -O flags the last one is in effect.
        optimisation = [flag for flag in args if flag.startswith("-O")][-1:]
        for flag in dict.fromkeys(args):
            if flag.startswith("-O") and [flag] != optimisation:
                continue
            if CODEGEN_FLAG.fullmatch(flag) and not flag.startswith(NOT_CODEGEN):
                counts[flag] = counts.get(flag, 0) + 1
    if compiles == 0:
        return None
    ordered = dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return {"compiles": compiles, "flags": ordered}


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _tree_digest(root: Path) -> str:
    """The digest of a tree's files, names and contents (what a driver build is made of)."""
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(root.rglob("*"))
                  if p.is_file() and "__pycache__" not in p.parts)  # fmt: skip
    return _digest_of_files(root, stamp)


@functools.lru_cache(maxsize=8)
def _digest_of_files(root: Path, stamp: tuple[tuple[str, int, int], ...]) -> str:
    """Hashed again whenever a file's name, time or size differs (`stamp`), else once per
    process: every build of a run asks for the drivers' key."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder per cache entry at a time; others wait and then find it done."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# Where a recipe's run-time knowledge begins (recipes/runtime.py): what follows this line is
# not a build input, so a change there rebuilds nothing.
RUN_TIME_MARKER = "# -- At run time"


def recipe_source(recipe: object) -> str:
    """A recipe module's source as a build input: up to its run-time section, if it has one
    (so that a recipe's key is the same as before the section was added), without its
    module-level import statements (so that moving a module the recipe imports, as a
    change of the package's layers does, rebuilds nothing: what the recipe does is its body)."""
    source = inspect.getsource(sys.modules[type(recipe).__module__])
    if RUN_TIME_MARKER in source:
        source = source.split(RUN_TIME_MARKER)[0].rstrip("\n") + "\n"
    return _without_imports(source)


def _without_imports(source: str) -> str:
    lines = source.splitlines(keepends=True)
    spans = [(node.lineno, node.end_lineno or node.lineno) for node in ast.parse(source).body
             if isinstance(node, ast.Import | ast.ImportFrom)]  # fmt: skip
    dropped = {n for first, last in spans for n in range(first, last + 1)}
    return "".join(line for n, line in enumerate(lines, 1) if n not in dropped)


class Builder:
    def __init__(self, cache: Path | None = None, quiet: bool = False) -> None:
        self.cache = cache or paths.cache_root()
        self.builds = self.cache / "builds"
        self.sources = Sources(self.cache)
        self.quiet = quiet
        self.jobs = os.cpu_count() or 1
        self._compiler: str | None = None

    def _say(self, text: str, status: bool = False) -> None:
        """A line on stderr; a `status` line (what starts now) is one a CI log may skip
        (core.progress)."""
        if not self.quiet:
            (progress.status if status else progress.event)(text)

    # -- keys -------------------------------------------------------------------------------

    def compiler(self) -> str:
        if self._compiler is None:
            path = shutil.which(COMPILER)
            if path is None:
                raise UserError(f"compiler {COMPILER} not found; run `./tlsbench doctor`")
            self._compiler = f"{os.path.realpath(path)}: {tool_version([COMPILER, '--version'])}"
        return self._compiler

    def cross_compiler(self, variant: Variant) -> str:
        """The compiler of a cross-built variant, with its version (a cache key input)."""
        name = arches.arch(variant.arch).cc(COMPILER)  # says what to install if missing
        return f"{os.path.realpath(name)}: {tool_version([name, '--version'])}"

    def key_inputs(self, variant: Variant) -> dict[str, Any]:
        recipe = recipe_for(variant)
        pin = variant.line.pin
        cross = arches.arch(variant.arch).cross is not None
        local = variant.line.local
        return {
            "source_sha256": pin.sha256 if pin else None,
            "upstream": pin.upstream if pin else None,
            # The archives a pin takes along (NSPR with NSS); only where there are some.
            **(
                {"with": {w: self.sources.pin(w).sha256 for w in pin.with_}}
                if pin and pin.with_
                else {}
            ),
            # A local tree or commit: its content (never its path).
            **({"source": local.snapshot().key()} if local is not None else {}),
            "options": variant.options(),
            "compiler": self.cross_compiler(variant) if cross else self.compiler(),
            "arch": variant.arch,
            "recipe": hashlib.sha256(recipe_source(recipe).encode()).hexdigest(),
            "tools": recipe.key_inputs(variant),
            # A cross target's own flags (native keys stay as they were).
            **({"arch_flags": list(arches.arch(variant.arch).flags)} if cross else {}),
            # The builds this one is built over (a recipe's `builds_on`: s2n-tls over the
            # aws-lc line), by their keys: rebuilding one of them rebuilds this one.
            **(
                {"builds_on": {line: self.key(Catalog().resolve(line)) for line in builds_on}}
                if (builds_on := getattr(recipe, "builds_on", ()))
                else {}
            ),
        }

    def key(self, variant: Variant) -> str:
        return _digest(self.key_inputs(variant))

    def folder(self, variant: Variant, key: str) -> Path:
        return self.builds / f"{variant.line.folder_name}-{key[:16]}"

    # -- building ---------------------------------------------------------------------------

    def build(self, variant: Variant) -> Build:
        for replaced in variant.replaced:  # said at every build, cached or not
            self._say(f"{variant.name}: the platform's macro replaces the file's: {replaced}")
        key, folder, manifest = self._library(variant)
        drivers_folder = self._build_drivers(variant, key, folder)
        return Build(variant, key, folder, manifest, drivers_folder)

    def _library(self, variant: Variant) -> tuple[str, Path, dict[str, Any]]:
        """The library build of a variant (built now unless cached): key, folder, manifest."""
        inputs = self.key_inputs(variant)
        key = _digest(inputs)
        folder = self.folder(variant, key)
        if not (folder / MANIFEST).exists():
            with _locked(self.builds / f".{folder.name}.lock"):
                if not (folder / MANIFEST).exists():
                    self._build_library(variant, inputs, key, folder)
        return key, folder, json.loads((folder / MANIFEST).read_text())

    def _base_builds(self, variant: Variant) -> dict[str, BaseBuild]:
        """The library builds a recipe is built over (its `builds_on` lines), built first."""
        bases = {}
        for line in getattr(recipe_for(variant), "builds_on", ()):
            _, folder, manifest = self._library(Catalog().resolve(line))
            bases[line] = BaseBuild(folder / "prefix", LinkInfo(**manifest["link"]))
        return bases

    def _build_library(
        self, variant: Variant, inputs: dict[str, Any], key: str, folder: Path
    ) -> None:
        work = folder.with_name(folder.name + f".tmp-{os.getpid()}")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        log = BuildLog(work / "build.log", variant.name, self.quiet)
        log.note(f"tlsbench build of {variant.name}\nkey {key}\n{json.dumps(inputs, indent=2)}")
        self._say(f"building {variant.name} (cache key {key[:16]}, -j{self.jobs})", status=True)
        started = time.monotonic()
        try:
            source = None
            if variant.line.pin is not None:
                log.step("fetch and verify source")
                source = self.sources.source_dir(variant.line.name)
            elif variant.line.local is not None:
                log.step(f"copy {variant.line.local.spec} into the cache")
                source = variant.line.local.export(self.sources.unpacked)
                snapshot = variant.line.local.snapshot()
                log.note(f"source: {json.dumps(snapshot.describe())}")
                for missing in snapshot.missing_submodules:
                    self._say(f"  warning: submodule {missing} of {variant.line.local.spec} "
                              "is not checked out; the build has it empty (git submodule "
                              "update --init fetches it)")  # fmt: skip
            companions = {
                w: self.sources.source_dir(w)
                for w in (variant.line.pin.with_ if variant.line.pin is not None else ())
            }
            cc = arches.arch(variant.arch).cc(COMPILER)
            cc_wrapper, compile_log = _recording_compiler(cc, work)
            ctx = BuildContext(variant, source, work, self.jobs, log, cc=cc_wrapper,
                               tool_path=str(compile_log.parent / "cc-record"),
                               compile_log=compile_log,
                               builds_on=self._base_builds(variant),
                               companions=companions)  # fmt: skip
            link = recipe_for(variant).build(ctx)
            compile_flags = _compile_flags(compile_log)
        except BaseException as exc:
            raise self._failed(exc, work, folder) from None
        shutil.rmtree(ctx.tree, ignore_errors=True)  # objects are not needed once installed
        shutil.rmtree(work / "cc-record", ignore_errors=True)
        compile_log.unlink(missing_ok=True)
        # Recipes saw the temporary folder; what is stored names the final one.
        link = LinkInfo(
            **{
                name: [item.replace(str(work), str(folder)) for item in items]
                for name, items in link.__dict__.items()
            }
        )
        elapsed = time.monotonic() - started
        pin = variant.line.pin
        local = variant.line.local
        if pin is not None:
            version = pin.library_version
        elif local is not None:
            assert source is not None
            version = localsource.tree_version(variant.library, source)
        elif variant.line.system_package:
            version = inputs["tools"][variant.line.system_package]
        else:
            version = "baseline"
        manifest = {
            "variant": variant.name,
            "library": variant.library,
            "version": version,
            **({"source": _source_of(pin)} if pin is not None else {}),
            **({"source": local.snapshot().describe()} if local is not None else {}),
            "key": key,
            "inputs": inputs,
            "link": link.__dict__,
            "compile_flags": compile_flags,
            **({"build_facts": ctx.facts} if ctx.facts else {}),
            "build_seconds": round(elapsed, 1),
            "built_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        (work / "variant.cmake").write_text(_variant_cmake(variant.library, link))
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        work.rename(folder)  # complete: only now can it be taken as done
        self._say(f"built {variant.name} in {elapsed:.0f}s")

    @staticmethod
    def _failed(exc: BaseException, work: Path, folder: Path) -> BaseException:
        """Keeps the log of a failed build beside the cache entry and drops the rest."""
        log = work / "build.log"
        failed_log = folder.with_name(folder.name + ".failed.log")
        if log.exists():
            shutil.copyfile(log, failed_log)
        shutil.rmtree(work, ignore_errors=True)
        if isinstance(exc, BuildError):
            return BuildError(str(exc).replace(str(log), str(failed_log)))
        return exc

    def drivers_key(self, key: str) -> str:
        """The key of the driver programs built against the library build `key`."""
        return _digest(
            {
                "library_key": key,
                "drivers": _tree_digest(paths.DRIVERS),
                "cmake": tool_version(["cmake", "--version"]),
                # Firmware images carry the test credentials compiled in: a new set is a new
                # image (the host drivers read them at run time, but share the key's rule).
                "credentials": certs.LAYOUT_VERSION,
            }
        )

    def _build_drivers(self, variant: Variant, key: str, folder: Path) -> Path:
        dkey = self.drivers_key(key)
        done = folder / f"drivers-{dkey[:16]}"
        if (done / "probe.json").exists():
            return done
        with _locked(folder / f".drivers-{dkey[:16]}.lock"):
            if (done / "probe.json").exists():
                return done
            work = folder / f"drivers-{dkey[:16]}.tmp-{os.getpid()}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            log = BuildLog(work / "build.log", f"{variant.name} drivers", self.quiet)
            target = arches.arch(variant.arch)
            cc = target.cc(COMPILER)
            ctx = BuildContext(variant, None, work, self.jobs, log, cc=cc)
            try:
                if target.firmware:
                    probe = self._build_firmware(variant, folder, ctx, work / "bin")
                else:
                    probe = self._build_programs(variant, folder, ctx, work)
            except BaseException as exc:
                raise self._failed(exc, work, done) from None
            (work / "probe.json").write_text(json.dumps(probe, indent=2) + "\n")
            shutil.rmtree(done, ignore_errors=True)
            work.rename(done)
        return done

    def _build_programs(
        self, variant: Variant, folder: Path, ctx: BuildContext, work: Path
    ) -> dict[str, Any]:
        """The driver programs (CMake), then what the probe says about the build."""
        target = arches.arch(variant.arch)
        cc = ctx.cc
        ctx.run(
            [
                "cmake", "-S", str(paths.DRIVERS), "-B", str(work / "tree"), "-G",
                "Ninja", f"-DCMAKE_C_COMPILER={cc}", *cmake_cross(variant.arch),
                f"-DTLSBENCH_VARIANT_CMAKE={folder / 'variant.cmake'}",
                f"-DCMAKE_RUNTIME_OUTPUT_DIRECTORY={work / 'bin'}",
            ],
            cwd=work,
        )  # fmt: skip
        ctx.run(["cmake", "--build", str(work / "tree"), "-j", str(self.jobs)], cwd=work)
        return self._run_probe(
            [*target.run_prefix(), str(work / "bin" / "tlsbench-probe")], ctx.log
        )

    @staticmethod
    def _build_firmware(
        variant: Variant, folder: Path, ctx: BuildContext, bin_folder: Path
    ) -> dict[str, Any]:
        """A bare-metal target's programs: its firmware images (no probe runs there)."""
        bin_folder.mkdir(parents=True, exist_ok=True)
        manifest = json.loads((folder / MANIFEST).read_text())
        target = arches.arch(variant.arch)
        ctx.log.step("firmware images")
        for command in firmware.build_commands(
            ctx.cc, variant.arch, list(target.flags), manifest["link"], variant.library,
            bin_folder,
        ):  # fmt: skip
            ctx.run(command, cwd=bin_folder)
        return firmware.probe(variant.arch, variant.library, manifest["version"])

    @staticmethod
    def _run_probe(command: list[str], log: BuildLog) -> dict[str, Any]:
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        log.note(f"$ {' '.join(command)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            raise log.fail(f"the probe exited with status {proc.returncode}")
        try:
            return dict(json.loads(proc.stdout))
        except json.JSONDecodeError as exc:
            raise log.fail(f"the probe printed no valid JSON ({exc})") from exc


def cmake_cross(arch: str) -> list[str]:
    """CMake's cross-compiling settings for a cross-built arch (none for native ones)."""
    target = arches.arch(arch)
    if target.cross is None:
        return []
    return ["-DCMAKE_SYSTEM_NAME=Linux", f"-DCMAKE_SYSTEM_PROCESSOR={target.cmake_processor}",
            f"-DCMAKE_FIND_ROOT_PATH=/usr/{target.cross}"]  # fmt: skip


def _cmake_list(items: list[str]) -> str:
    quoted = " ".join('"' + i.replace("\\", "\\\\").replace('"', '\\"') + '"' for i in items)
    return quoted


def _source_of(pin: Any) -> dict[str, str]:
    """Where the build's source came from: a Debian source package or a crate, pinned."""
    what = "crate" if pin.kind == "crate" else "debian_source_package"
    return {"kind": pin.kind, what: pin.package, "version": pin.upstream, "file": pin.file,
            "sha256": pin.sha256}  # fmt: skip


def _variant_cmake(library: str, link: LinkInfo) -> str:
    """The facts the drivers' CMakeLists.txt needs to build against one variant."""
    return (
        "# Generated by tlsbench build: how to compile and link against this variant.\n"
        f'set(TLSBENCH_LIBRARY "{library}")\n'
        f"set(TLSBENCH_INCLUDE_DIRS {_cmake_list(link.include_dirs)})\n"
        f"set(TLSBENCH_DEFINES {_cmake_list(link.defines)})\n"
        f"set(TLSBENCH_C_FLAGS {_cmake_list(link.c_flags)})\n"
        f"set(TLSBENCH_LINK_FLAGS {_cmake_list(link.link_flags)})\n"
        f"set(TLSBENCH_LIBRARIES {_cmake_list(link.libraries)})\n"
    )
