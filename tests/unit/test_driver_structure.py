"""The driver's structure, read from its object files (no library is built): no two of the
core's files call each other in a circle, every scenario file is in the registry, and the
adapters see only the contract (driver.h and names.h): no core header included, no tb_ name
used that the contract does not declare (the built adapters' objects are checked the same way
in tests/libraries/test_adapters.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from adapter_contract import (
    ADAPTERS,
    adapter_files,
    adapter_sources,
    core_includes,
    object_violations,
    source_violations,
)
from tlsbench.core import paths

CORE = paths.DRIVERS / "core"
SCENARIOS = CORE / "scenarios"
# heap.c and heap_off.c are alternatives (the heap and the timing driver): one is enough.
ALTERNATIVES = {"heap_off.c"}


def core_sources() -> list[Path]:
    return [p for p in sorted(CORE.glob("*.c")) + sorted(SCENARIOS.glob("*.c"))
            if p.name not in ALTERNATIVES]  # fmt: skip


@pytest.fixture(scope="module")
def symbols(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[set[str], set[str]]]:
    """file (relative to drivers/core) -> (symbols it defines, symbols it uses)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or shutil.which("nm") is None:
        pytest.fail("a C compiler and nm are needed (make deps installs them)")
    out = tmp_path_factory.mktemp("objects")
    table: dict[str, tuple[set[str], set[str]]] = {}
    for source in core_sources():
        name = str(source.relative_to(CORE))
        obj = out / (name.replace("/", "_") + ".o")
        subprocess.run(
            [compiler, "-std=gnu11", "-c", f"-I{paths.DRIVERS / 'include'}", f"-I{CORE}",
             str(source), "-o", str(obj)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        listing = subprocess.run(["nm", "-P", str(obj)], check=True, capture_output=True,
                                 text=True).stdout  # fmt: skip
        defined, used = set(), set()
        for line in listing.splitlines():
            symbol, kind = line.split()[:2]
            if kind == "U":
                used.add(symbol)
            elif kind.isupper():
                defined.add(symbol)
        table[name] = (defined, used)
    return table


def test_no_file_of_the_core_calls_itself_through_others(symbols) -> None:
    """A file uses another when it refers to a function or object the other defines; the
    graph of those uses has no cycle (function pointers in tables are not uses)."""
    owner = {sym: name for name, (defined, _) in symbols.items() for sym in defined}
    edges = {name: sorted({owner[s] for s in used if s in owner} - {name})
             for name, (_, used) in symbols.items()}  # fmt: skip
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in edges:
        if node not in state:
            cycle = visit(node)
            assert cycle is None, "a circle of calls: " + " -> ".join(cycle)
    # main.c is the top: nothing uses it.
    assert not [n for n, e in edges.items() if "main.c" in e]


def test_every_scenario_file_is_registered(symbols) -> None:
    """A scenario is one file defining tb_scenario_<file name> and one line in registry.c."""
    _, registered = symbols["scenarios/registry.c"]
    for source in sorted(SCENARIOS.glob("*.c")):
        if source.name == "registry.c":
            continue
        name = f"tb_scenario_{source.stem}"
        defined, _ = symbols[f"scenarios/{source.name}"]
        assert name in defined, f"{source.name} defines no {name}"
        assert name in registered, f"{source.name} is not listed in scenarios/registry.c"


@pytest.mark.parametrize("source", adapter_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_adapter_includes_a_core_header(source) -> None:
    assert not core_includes(source), f"{source.name} includes {core_includes(source)}"


@pytest.mark.parametrize("source", adapter_sources(), ids=lambda p: p.name)
def test_every_tb_name_an_adapter_uses_is_the_contracts(source) -> None:
    """Read from the source, for every adapter (their libraries are not built here)."""
    assert not source_violations(source), (
        f"{source.name} uses {sorted(source_violations(source))}, which driver.h and names.h "
        "do not declare"
    )


def test_the_adapter_objects_that_need_no_library_use_only_the_contract(tmp_path) -> None:
    """null.c and tls_wire.c compiled as the driver's adapter unit is (include/ only), and the
    tb_ symbols their objects leave undefined looked up in the contract."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler is not None and shutil.which("nm"), "a C compiler and nm (make deps)"
    objects = []
    for name in ("null.c", "tls_wire.c"):
        obj = tmp_path / (name + ".o")
        subprocess.run(
            [compiler, "-std=gnu11", "-c", "-Werror=implicit-function-declaration",
             f"-I{paths.DRIVERS / 'include'}", str(ADAPTERS / name), "-o", str(obj)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        objects.append(obj)
    assert not object_violations(objects)
