"""The driver under valgrind's callgrind: the command prefix instruction mode runs it with,
and its output read back as one side's cost by function (`tlsbench.core.costs.SideCosts`).

What is counted: only what the driver toggles on (`--collect-atstart=no`; the driver turns
collection on around each measured library call of the side named by $TLSBENCH_COLLECT),
with address randomisation off (`setarch -R`). Per instruction (`--dump-instr=yes`), two
events: `Ir`, instructions executed, and `Ge`, callgrind's "global bus events"
(`--collect-bus=yes`): on x86-64 the instructions that lock the bus, LOCK-prefixed
read-modify-writes and XCHG with a memory operand (docs/methodology.md says which, and
tests/null/test_callgrind_atomics.py finds it out). The atomics of a handshake are these.

Calls: callgrind's own call counts cover the whole run, collected or not (it counts a call
whether or not it collects costs), so a function's calls here are the executions of its
first instruction while collecting: every entry, a tail call included, counted exactly in
the measured calls only.

Where a function comes from: callgrind names the function and its object file; its source
file comes from the object's debug information where it has any (the driver's own sources,
glibc through Debian's libc6-dbg), else from the object's symbol table (the FILE symbol a
static function follows, the archive member that defines a global one: the pinned libraries
are static archives built without -g), else nothing. An object with no symbol table and no
debug file (Debian's shared libcrypto, libgnutls) says so, and its functions are grouped
by its file.
"""

from __future__ import annotations

import bisect
import functools
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tlsbench.core import costs

EVENTS = ("Ir", "Ge")
# The C and C++ runtime of the host: their functions are the "libc" origin.
LIBC_OBJECT = re.compile(r"(libc|libm|libpthread|libdl|librt|ld-linux[-\w]*|libgcc_s|"
                         r"libstdc\+\+|libatomic)\.so[.\d]*")  # fmt: skip
# The driver's own sources (drivers/ of the tree it was built from): the harness.
DRIVER_SOURCE = re.compile(r".*/drivers/(core|adapters|include)(/[^/]+)*/[^/]+")
DEBUG_ROOT = Path("/usr/lib/debug")
# Code outside any object file (the PLT stubs calls into shared libraries go through).
NO_OBJECT = "???"
PLT_STUBS = "(PLT stubs)"
# callgrind separates a recursive function's levels as `name'2`, and names a versioned
# symbol `name@@GLIBC_2.34`: one function, by its name, here.
RECURSION = re.compile(r"'\d+$|@@?[\w.]+$")


def command_prefix(out_file: Path) -> list[str]:
    """callgrind counting only what the driver toggles, with address randomisation off,
    instructions and bus-locking instructions per instruction address."""
    return [
        "setarch", "-R", "valgrind", "--tool=callgrind", "--collect-atstart=no",
        "--collect-bus=yes", "--dump-instr=yes", f"--callgrind-out-file={out_file}",
    ]  # fmt: skip


# ---------------------------------------------------------------------------- the format


@dataclass
class RawFunction:
    """One function of a callgrind output: its self cost summed over its contexts."""

    name: str
    source_path: str  # "" where callgrind knows no file ("???")
    object_path: str
    instructions: int = 0
    atomics: int = 0
    # instruction address -> executions, kept for the lowest addresses only (the entry)
    entry_address: int | None = None
    entry_count: int = 0
    addresses: dict[int, int] = field(default_factory=dict)


@dataclass
class Profile:
    """A callgrind output read whole: its totals and every function with a cost."""

    events: tuple[str, ...]
    totals: dict[str, int]
    functions: list[RawFunction]


def _name(value: str, table: dict[str, str]) -> str:
    """A compressed name: `(id) name` defines the id, `(id)` reuses it."""
    if value.startswith("("):
        ident, _, rest = value.partition(")")
        ident += ")"
        if rest.strip():
            table[ident] = rest.strip()
            return rest.strip()
        return table.get(ident, "")
    return value.strip()


def parse(text: str) -> Profile:
    """A callgrind output file's text (positions `instr line` or `line`; any events)."""
    events: tuple[str, ...] = ()
    positions = ["line"]
    totals: dict[str, int] = {}
    objects: dict[str, str] = {}
    files: dict[str, str] = {}
    names: dict[str, str] = {}
    found: dict[tuple[str, str, str], RawFunction] = {}
    ob = fl = ""
    current: RawFunction | None = None
    last = [0, 0]  # last self-cost position per column (the format's relative positions)
    inclusive_next = False  # the line after `calls=` is the call's inclusive cost

    def position(fields: list[str]) -> list[int]:
        out = []
        for i, value in enumerate(fields):
            if value == "*":
                out.append(last[i])
            elif value[0] in "+-":
                out.append(last[i] + int(value))
            else:
                out.append(int(value, 0))
        return out

    for line in text.splitlines():
        if not line:
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            fields = line.split()
            width = len(positions)
            where = position(fields[:width])
            if inclusive_next:  # the call's inclusive cost: the callee's, not this function's
                inclusive_next = False
                continue
            last[:width] = where
            if current is None:
                continue
            values = [int(v) for v in fields[width:]]
            ir = values[0] if values else 0
            current.instructions += ir
            if len(values) > 1 and len(events) > 1:
                current.atomics += values[events.index("Ge")] if "Ge" in events else 0
            if positions[0] == "instr":
                address = where[0]
                current.addresses[address] = current.addresses.get(address, 0) + ir
            continue
        key, sep, value = line.partition("=")
        if sep:
            if key == "ob":
                ob = _name(value, objects)
            elif key in ("fl", "fi", "fe"):
                name = _name(value, files)
                if key == "fl":
                    fl = name
            elif key == "fn":
                fn = RECURSION.sub("", _name(value, names))
                ident = (ob, fl, fn)
                current = found.get(ident)
                if current is None:
                    current = found[ident] = RawFunction(fn, "" if fl == "???" else fl, ob)
            elif key == "cob":
                _name(value, objects)
            elif key in ("cfi", "cfl"):
                _name(value, files)
            elif key == "cfn":
                _name(value, names)
            elif key == "calls":
                inclusive_next = True
            continue
        key, sep, value = line.partition(":")
        if sep:
            if key == "events":
                events = tuple(value.split())
            elif key == "positions":
                positions = value.split()
            elif key == "totals":
                for event, count in zip(events, value.split(), strict=False):
                    totals[event] = totals.get(event, 0) + int(count)
    for f in found.values():
        if f.addresses:
            f.entry_address = min(f.addresses)
            f.entry_count = f.addresses[f.entry_address]
    return Profile(events, totals, [f for f in found.values() if f.instructions or f.atomics])


def read_totals(out_file: Path) -> dict[str, int]:
    """The totals line of a callgrind output: event -> count."""
    profile_events: tuple[str, ...] = ()
    totals: dict[str, int] = {}
    for line in out_file.read_text().splitlines():
        if line.startswith("events:"):
            profile_events = tuple(line.split()[1:])
        elif line.startswith("totals:"):
            for event, count in zip(profile_events, line.split()[1:], strict=False):
                totals[event] = totals.get(event, 0) + int(count)
    if not totals:
        raise ValueError(f"no totals in {out_file}")
    return totals


def total_instructions(out_file: Path) -> int:
    return read_totals(out_file)["Ir"]


# ---------------------------------------------------------------------------- symbols


@dataclass(frozen=True)
class Symbol:
    start: int
    end: int
    name: str
    source: str  # "" where the symbol table does not say


@dataclass
class ObjectSymbols:
    """An object file's functions by address, and whether it has symbols at all."""

    path: str
    has_symbols: bool
    symbols: list[Symbol]

    def __post_init__(self) -> None:
        self.symbols.sort(key=lambda s: (s.start, -s.end))
        self._starts = [s.start for s in self.symbols]

    def at(self, address: int) -> Symbol | None:
        i = bisect.bisect_right(self._starts, address) - 1
        while i >= 0 and self.symbols[i].start <= address:
            s = self.symbols[i]
            if address < s.end or s.start == address:
                return s
            i -= 1
            if i >= 0 and self.symbols[i].start != s.start:
                break
        return None


def _output(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace",
                              check=False)  # fmt: skip
    except OSError:
        return ""
    return done.stdout if done.returncode == 0 else ""


def _debug_file_exists(path: Path, sections: str) -> bool:
    """Whether a separate debug file for the object is installed (Debian's -dbg and
    -dbgsym packages: by build id, or by the debug link's name)."""
    notes = _output(["readelf", "-nW", str(path)])
    found = re.search(r"Build ID:\s*([0-9a-f]+)", notes)
    if found and (DEBUG_ROOT / ".build-id" / found.group(1)[:2]
                  / f"{found.group(1)[2:]}.debug").exists():  # fmt: skip
        return True
    if ".gnu_debuglink" in sections:
        link = _output(["readelf", "--string-dump=.gnu_debuglink", str(path)])
        named = re.search(r"\]\s+(\S+\.debug)", link)
        if named:
            where = path.resolve().parent
            candidates = (where / named.group(1), where / ".debug" / named.group(1),
                          DEBUG_ROOT / where.relative_to("/") / named.group(1))  # fmt: skip
            return any(c.exists() for c in candidates)
    return False


@functools.cache
def object_symbols(path: str, archives: tuple[str, ...] = ()) -> ObjectSymbols:
    """The functions of an object file from its symbol table, each with its source file: the
    archive member of `archives` that defines it (a function the linker made local, such as
    OpenSSL's hidden assembly, keeps its member), else, for a static function, the FILE
    symbol it follows in the object."""
    file = Path(path)
    if not file.is_file():
        return ObjectSymbols(path, path == NO_OBJECT, [])
    sections = _output(["readelf", "-SW", str(file)])
    has_symtab = re.search(r"\]\s+\.symtab\s", sections) is not None
    if not has_symtab:
        return ObjectSymbols(path, _debug_file_exists(file, sections), [])
    members = archive_sources(archives)
    symbols = []
    context = ""
    for fields in _symbol_rows(_output(["readelf", "-sW", str(file)])):
        kind, bind, name = fields[3], fields[4], fields[7]
        if kind == "FILE":
            context = name
            continue
        if kind not in ("FUNC", "IFUNC") or fields[6] == "UND":
            continue
        start = int(fields[1], 16)
        size = int(fields[2], 0) if fields[2].isdigit() else int(fields[2], 16)
        name = name.split("@", 1)[0]
        candidates = members.get(name, ())
        if len(candidates) == 1 or (candidates and context not in candidates):
            where = candidates[0]
        else:
            where = context if bind == "LOCAL" else ""
        symbols.append(Symbol(start, start + size, name, where))
    return ObjectSymbols(path, True, symbols)


def _symbol_rows(text: str) -> Iterable[list[str]]:
    """The rows of `readelf -sW`: Num: Value Size Type Bind Vis Ndx Name. A FILE symbol
    without a name (where the linker puts the symbols it made local, after every object's
    own) ends the previous file's: its name is ""."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 7 or not fields[0].endswith(":") or not fields[0][:-1].isdigit():
            continue
        if len(fields) == 7 and fields[3] == "FILE":
            yield [*fields, ""]
        elif len(fields) >= 8:
            yield fields


@functools.cache
def archive_sources(archives: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Function name -> the source files of the archive members that define it: a member's
    FILE symbol (the C file it was compiled from), or, where it has none (assembly), its
    name as the build named it (CMake's `x.c.o`, OpenSSL's `libcrypto-lib-x86_64-mont5.o`:
    x86_64-mont5.s, libtool's `libwolfssl_la-aes_asm.o`)."""
    found: dict[str, list[str]] = {}
    for archive in archives:
        member, source = "", ""
        pending: list[str] = []
        for line in [*_output(["readelf", "-sW", archive]).splitlines(), "File: (end)"]:
            if line.startswith("File: "):
                for name in pending:
                    where = source or member_source(member)
                    if where not in found.setdefault(name, []):
                        found[name].append(where)
                member = line.rsplit("(", 1)[-1].rstrip(")")
                source, pending = "", []
                continue
            fields = line.split()
            if len(fields) < 8 or not fields[0].endswith(":") or not fields[0][:-1].isdigit():
                continue
            if fields[3] == "FILE" and not source:
                source = fields[7]
            elif fields[3] in ("FUNC", "IFUNC") and fields[6] != "UND":
                pending.append(fields[7])
    return {name: tuple(where) for name, where in found.items()}


def member_source(member: str) -> str:
    """The source file of an archive member without a FILE symbol (an assembly file):
    `ecp.c.o` -> ecp.c, `libcrypto-lib-x86_64-mont5.o` -> x86_64-mont5.s,
    `libwolfssl_la-aes_asm.o` -> aes_asm.s, the cc crate's `6cca901d1d9807b8-sha256-x86_64.o`
    -> sha256-x86_64.s; rustc's `rustls.d996129fbfc5cc16-cgu.09.rcgu.o` -> its crate."""
    base = re.sub(r"\.(obj|o)$", "", member)
    crate = re.fullmatch(r"(\w+)\.[0-9a-z]+-cgu\.\d+(\.rcgu)?", base)
    if crate:  # rustc's codegen units: the crate is all it says
        return f"{crate.group(1)} (Rust crate)"
    if re.match(r"lib\w+-(lib|shlib|dso)-", base):  # OpenSSL's build names
        base = base.split("-", 2)[2]
    elif "_la-" in base:
        base = base.rsplit("_la-", 1)[1]
    base = re.sub(r"^[0-9a-f]{16}-", "", base)  # the cc crate's (aws-lc-rs, ring)
    return base if re.search(r"\.(c|cc|cpp|S|s|asm)$", base) else base + ".s"


# ---------------------------------------------------------------------------- costs


def origin_of(object_path: str, source_path: str) -> str:
    if object_path == NO_OBJECT or LIBC_OBJECT.fullmatch(Path(object_path).name):
        return "libc"
    if DRIVER_SOURCE.fullmatch(source_path):
        return "harness"
    return "library"


def side_costs(profile: Profile, side: str, operations: int,
               archives: Iterable[str] = ()) -> costs.SideCosts:  # fmt: skip
    """One side's costs from a callgrind profile of its measured calls: each function with
    its source file, origin and group; `archives` the static libraries linked into the
    driver (where global functions' source files are found)."""
    linked = tuple(sorted(str(a) for a in archives if str(a).endswith(".a")))
    unsymbolised: list[str] = []
    functions = []
    for raw in profile.functions:
        symbols = object_symbols(raw.object_path, linked)
        obj = PLT_STUBS if raw.object_path == NO_OBJECT else Path(raw.object_path).name
        if not symbols.has_symbols and obj not in unsymbolised:
            unsymbolised.append(obj)
        symbol = symbols.at(raw.entry_address) if raw.entry_address is not None else None
        source = Path(raw.source_path).name if raw.source_path else (
            symbol.source if symbol else "")  # fmt: skip
        # Entries: executions of the function's first instruction (its symbol's start,
        # else the lowest address it ran) while collecting.
        start = symbol.start if symbol else raw.entry_address
        calls = raw.addresses.get(start, 0) if start is not None else 0
        origin = origin_of(raw.object_path, raw.source_path)
        group = (costs.object_group(obj) if not symbols.has_symbols and origin != "libc"
                 else costs.group_of(raw.name, source, origin, obj))  # fmt: skip
        functions.append(costs.FunctionCost(raw.name, source, obj, group, raw.instructions,
                                            raw.atomics, calls, origin))  # fmt: skip
    notes = [f"{obj} has no symbol table and no debug file: its functions are grouped by the "
             f"library file" for obj in unsymbolised]  # fmt: skip
    result = costs.side_costs(side, operations, functions, unsymbolised, notes=notes)
    # Every instruction callgrind counted is some function's: the split is exact.
    if result.instructions != profile.totals.get("Ir", 0) or \
            result.atomics != profile.totals.get("Ge", 0):  # fmt: skip
        raise ValueError(
            f"{side}: the functions sum to {result.instructions} instructions and "
            f"{result.atomics} atomics, callgrind's totals are {profile.totals}"
        )
    return result


def read_costs(out_file: Path, side: str, operations: int,
               archives: Iterable[str] = ()) -> costs.SideCosts:  # fmt: skip
    return side_costs(parse(out_file.read_text()), side, operations, archives)
