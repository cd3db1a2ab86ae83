"""The package's layers hold (pyproject.toml [tool.importlinter], docs/architecture.md): no
import reaches up a layer, no imports form a cycle, and the only imports made inside
functions are those [tool.tlsbench.lazy-imports] lists with a reason. Each check is also
seen failing: on a copy of the package with one bad import planted inside a function."""

from __future__ import annotations

import ast
import fnmatch
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tlsbench.core import paths

PACKAGE = paths.REPO / "src" / "tlsbench"
PYPROJECT = paths.REPO / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# Run in a child process against a package folder: every import of a tlsbench module that
# closes a cycle (type-only imports left out: they run under no interpreter), as chains.
CYCLES = """
import json, sys
import grimp
graph = grimp.build_graph("tlsbench", exclude_type_checking_imports=True, cache_dir=None)
found = []
for module in sorted(graph.modules):
    for imported in sorted(graph.find_modules_directly_imported_by(module)):
        chain = graph.find_shortest_chain(importer=imported, imported=module)
        if chain:
            found.append([module, *chain])
print(json.dumps(found))
"""


def lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's contracts of pyproject.toml, on the package under `src`."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(PYPROJECT), "--no-cache"],
        capture_output=True, text=True, check=False, cwd=src, env={"PYTHONPATH": str(src)},
    )  # fmt: skip


def cycles(src: Path) -> list[list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", CYCLES],
        capture_output=True, text=True, check=True, cwd=src, env={"PYTHONPATH": str(src)},
    )  # fmt: skip
    return list(json.loads(proc.stdout))


def lazy_imports(package: Path) -> list[tuple[str, str]]:
    """(importer, imported) for every import of a tlsbench module made inside a function."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [f"{node.module}.{a.name}" for a in node.names]
                    targets = [node.module, *names]
                elif isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                else:
                    continue
                for target in targets:
                    if target.startswith("tlsbench") and _is_module(package, target):
                        found.append((module, target))
    return sorted(set(found))


def _is_module(package: Path, name: str) -> bool:
    path = package.parent / name.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def unlisted_lazy_imports(package: Path) -> list[tuple[str, str]]:
    listed = tomllib.loads(PYPROJECT.read_text())["tool"]["tlsbench"]["lazy-imports"]
    return [
        (importer, imported)
        for importer, imported in lazy_imports(package)
        if not any(fnmatch.fnmatchcase(importer, p) for p in listed["importers"])
        and not any(fnmatch.fnmatchcase(imported, p) for p in listed["imported"])
    ]


@pytest.fixture
def planted(tmp_path: Path):
    """A copy of the package, and a way to add a function with one import to a module."""
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "tlsbench", ignore=shutil.ignore_patterns("__pycache__"))

    def plant(module: str, statement: str) -> None:
        path = src / (module.replace(".", "/") + ".py")
        path.write_text(path.read_text() + f"\n\ndef _planted() -> None:\n    {statement}\n")

    return src, plant


def test_no_import_reaches_up_a_layer() -> None:
    proc = lint_imports(PACKAGE.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_an_upward_import_inside_a_function_breaks_the_contract(planted) -> None:
    src, plant = planted
    plant("tlsbench.core.stats", "from tlsbench.cli import doctor  # noqa")
    proc = lint_imports(src)
    assert proc.returncode != 0
    assert "tlsbench.core.stats -> tlsbench.cli.doctor" in proc.stdout


def test_no_imports_form_a_cycle() -> None:
    assert cycles(PACKAGE.parent) == []


def test_a_cycle_made_inside_a_function_is_found(planted) -> None:
    src, plant = planted
    plant("tlsbench.builds.arches", "from tlsbench.builds import build  # noqa")
    found = cycles(src)
    assert ["tlsbench.builds.arches", "tlsbench.builds.build", "tlsbench.builds.arches"] in found


def test_every_import_made_inside_a_function_is_listed_with_its_reason() -> None:
    assert unlisted_lazy_imports(PACKAGE) == []


def test_an_unlisted_import_inside_a_function_is_found(planted) -> None:
    src, plant = planted
    plant("tlsbench.run.runner", "from tlsbench.core import stats  # noqa")
    assert ("tlsbench.run.runner", "tlsbench.core.stats") in unlisted_lazy_imports(src / "tlsbench")
