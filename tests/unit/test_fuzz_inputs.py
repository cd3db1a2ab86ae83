"""Fuzzing the files users edit: shipped experiments, variants.toml and sources/pins.toml.

Each mutation (bytes flipped, inserted or deleted; or one TOML value replaced by a value of
another type or range) must give exit 0 or a clear error (exit 2), never a traceback, and
a refused experiment must leave the store untouched. Seeded: a failure names its seed and
can be replayed. `make fuzz` runs many more mutations than `make test`.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import Any

import pytest

from tlsbench.builds.sources import load_pins
from tlsbench.builds.variants import Catalog
from tlsbench.cli import main
from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.run import experiments

COUNT = int(os.environ.get("TLSBENCH_FUZZ_COUNT", "60"))
SEED = int(os.environ.get("TLSBENCH_FUZZ_SEED", "20261123"))

ODD_VALUES: list[Any] = [
    -1, 0, 1, 7, 2**31, 2**63 - 1, -(2**63), 3.5, -0.0, float("inf"), True, False, "", "x",
    "rsa999", "TLS_AES_128_GCM_SHA265", "1.1", "../../etc", "\u00e9\u4e2d", [], [1, "a"], {},
    {"a": 1}, [[1]], [{}],
]  # fmt: skip


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    blob = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(blob) + 1)
        action = rng.choice(("flip", "insert", "delete", "dup"))
        if action == "flip" and where < len(blob):
            blob[where] ^= 1 << rng.randrange(8)
        elif action == "insert":
            blob[where:where] = bytes([rng.choice(b'"[]{}=,.#\n\\\x00\xff-0123456789')])
        elif action == "delete" and where < len(blob):
            del blob[where]
        elif action == "dup":
            line_start = blob.rfind(b"\n", 0, where) + 1
            line_end = blob.find(b"\n", where)
            line_end = len(blob) if line_end < 0 else line_end
            blob[line_end:line_end] = b"\n" + blob[line_start:line_end]
    return bytes(blob)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {float("inf"): "inf"}.get(value, repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"


def _mutate_value(text: str, rng: random.Random) -> str:
    """Replaces the value of one `key = value` line by an odd one (same key, same place)."""
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines)
                  if "=" in line and not line.lstrip().startswith(("#", "["))]  # fmt: skip
    if not candidates:
        return text
    i = rng.choice(candidates)
    key = lines[i].split("=", 1)[0]
    lines[i] = f"{key}= {_toml_value(rng.choice(ODD_VALUES))}"
    return "\n".join(lines) + "\n"


def _mutants(files: list[Path], count: int, seed: int) -> list[tuple[str, Path, bytes]]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        source = rng.choice(files)
        data = source.read_bytes()
        if rng.random() < 0.5:
            mutated = _mutate_bytes(data, rng)
        else:
            mutated = _mutate_value(data.decode(), rng).encode()
        out.append((f"seed {seed} #{n} from {source.name}", source, mutated))
    return out


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def test_mutated_experiments_exit_0_or_2_and_never_touch_the_store(tmp_path: Path, capsys) -> None:
    files = sorted(experiments.EXPERIMENTS_DIR.glob("*.toml"))
    # A store with a run in it, as a user's is: a refused experiment must leave it as it was.
    db = tmp_path / "results" / "r.db"
    store = Store(db)
    store.new_run("earlier", "q", "time", 1, {}, "", "c")
    store.close()
    listing = sorted(p.name for p in db.parent.iterdir())
    seen: dict[int, int] = {}
    for label, _source, data in _mutants(files, COUNT, SEED):
        path = tmp_path / "mutant.toml"
        path.write_bytes(data)
        try:
            experiments.load(str(path))
        except UserError as exc:
            assert str(exc).strip(), label  # never an empty message
            # Refused before anything runs: the run command exits 2 and writes nothing.
            before = _digest(db)
            code = main(["run", str(path), "--db", str(db), "--quiet"])
            err = capsys.readouterr().err
            assert code == 2, (label, err)
            assert "Traceback" not in err and err.startswith("tlsbench: error: "), (label, err)
            assert _digest(db) == before, label
            seen[2] = seen.get(2, 0) + 1
        except Exception as exc:
            pytest.fail(f"{label}: {type(exc).__name__}: {exc}\n{data.decode(errors='replace')}")
        else:
            assert main(["run", str(path), "--dry-run", "--db", str(db)]) == 0, label
            capsys.readouterr()
            seen[0] = seen.get(0, 0) + 1
    print(f"fuzz: {COUNT} mutated experiments (seed {SEED}): exit 0 x{seen.get(0, 0)}, "
          f"exit 2 x{seen.get(2, 0)}, 0 tracebacks")  # fmt: skip
    assert sorted(p.name for p in db.parent.iterdir()) == listing  # no -wal, no new file
    assert seen.get(2, 0) > COUNT // 4, seen  # the mutations do reach the validation


def test_mutated_variants_and_pins_give_clear_errors(tmp_path: Path) -> None:
    targets = [paths.VARIANTS_FILE, paths.PINS_FILE]
    seen = {0: 0, 2: 0}
    for label, source, data in _mutants(targets, COUNT, SEED + 1):
        path = tmp_path / source.name
        path.write_bytes(data)
        try:
            if source == paths.PINS_FILE:
                Catalog(pins=load_pins(path))
            else:
                catalog = Catalog(variants_file=path)
                for spec in catalog.defaults:
                    catalog.resolve(spec).options()
        except UserError as exc:
            assert str(exc).strip(), label
            assert exc.exit_code == 2, (label, str(exc))  # bad input, as the CLI reports it
            seen[2] += 1
        except Exception as exc:
            pytest.fail(f"{label}: {type(exc).__name__}: {exc}\n{data.decode(errors='replace')}")
        else:
            seen[0] += 1
    print(f"fuzz: {COUNT} mutated variants.toml / pins.toml (seed {SEED + 1}): exit 0 "
          f"x{seen[0]}, exit 2 x{seen[2]}, 0 tracebacks")  # fmt: skip
    assert seen[2] > COUNT // 4, seen
