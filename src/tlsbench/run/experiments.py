"""Experiments as data: a TOML file expanded into named run points.

An experiment file (experiments/NAME.toml) opens with the question it answers:

    question = "How does handshake heap grow with record buffer size?"
    repetitions = 5          # driver processes per point (default 5)
    timeout = 120            # seconds per driver process (default 300)
    mode = "instructions"    # time (default) or instructions, unless `run --mode` says

    [defaults]               # options of every point unless the matrix sets them
    scenario = "handshake"
    iterations = 20

    [per_scenario.records]   # options of the points of one scenario (over [defaults])
    iterations = 2000

    [matrix]                 # the cartesian product of these lists
    variant = ["mbedtls-3.6.6", "wolfssl-5.7.2"]
    auth = ["none", "server", "mutual"]

    [[exclude]]              # drop the points matching every key given
                             # (several [[matrix]] blocks may replace the one [matrix])
    variant = "mbedtls-2.28.x"
    tls = "1.3"

    [[include]]              # extra points (defaults apply)
    variant = "null"
    scenario = "records"

Point names are stable and composable: the scenario, then the value of every option the
point sets, in a fixed key order (`handshake_1.3_rsa2048_mutual`); a point is identified by
(variant, name), and two points with the same identity are an error.
"""

from __future__ import annotations

import difflib
import itertools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench import scenarios
from tlsbench.builds.variants import Catalog, Variant
from tlsbench.core import paths
from tlsbench.core.errors import UserError, read_user_file
from tlsbench.core.points import (
    CERTIFICATE_KEYS,
    RunPoint,
    authenticates_by_psk,
    negotiates_no_key_exchange,
)
from tlsbench.driver.declaration import declared
from tlsbench.scenarios.base import PointChecker

__all__ = ["Experiment", "RunPoint", "load", "only", "point_name"]

EXPERIMENTS_DIR = paths.REPO / "experiments"
TOP_KEYS = {"question", "description", "repetitions", "timeout", "mode", "defaults",
            "per_scenario", "matrix", "include", "exclude"}  # fmt: skip
# How an experiment's points are measured when `tlsbench run` is not told (`--mode`).
MODES = ("time", "instructions")
MAX_REPETITIONS = 1000
MAX_TIMEOUT_S = 24 * 3600


def point_keys() -> tuple[str, ...]:
    """Every key a point may set: its variant and scenario, then the families' keys
    (scenarios/: the options in name order, then the tuning keys)."""
    return ("variant", "scenario", *scenarios.experiment_keys())


@dataclass
class Experiment:
    name: str
    path: Path
    text: str
    question: str
    repetitions: int
    timeout: float
    points: list[RunPoint] = field(default_factory=list)
    mode: str = "time"  # what `tlsbench run` measures it in unless told (--mode)


def point_name(scenario: str, options: dict[str, Any]) -> str:
    """The scenario, then each option's name part in key order (scenarios/base.py)."""
    every = scenarios.experiment_keys()
    parts = [scenario] + [every[k].part(options[k])  # type: ignore[misc]
                          for k in scenarios.named_keys() if k in options]  # fmt: skip
    return "_".join(parts)


def _line_of(text: str, pattern: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if re.search(pattern, line):
            return number
    return None


def find(name_or_path: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or "/" in name_or_path:
        if not candidate.exists():
            raise UserError(f"no experiment file {candidate}")
        if not candidate.is_file():
            raise UserError(f"{candidate} is not a file: give an experiment's .toml file")
        return candidate
    path = EXPERIMENTS_DIR / f"{name_or_path}.toml"
    if not path.exists():
        known = sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.toml"))
        close = difflib.get_close_matches(name_or_path, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UserError(f"unknown experiment {name_or_path!r}.{hint} Known: {', '.join(known)}")
    return path


def _describe(value: Any) -> str:
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)  # fmt: skip
    return f"{value!r} ({kind})"


class _Loader(PointChecker):
    def __init__(self, path: Path, catalog: Catalog, variants: list[str] | None = None) -> None:
        self.path = path
        self.catalog = catalog
        self.text = read_user_file(path)
        self.declared = declared()
        # `tlsbench ab`: every point of the experiment for each of these variants instead.
        self.variants = variants

    def error(self, message: str, pattern: str | None = None) -> UserError:
        line = _line_of(self.text, pattern) if pattern else None
        where = f"{self.path}:{line}" if line else str(self.path)
        return UserError(f"{where}: {message}")

    def check_keys(self, table: dict[str, Any], allowed: tuple[str, ...] | set[str],
                   what: str) -> None:  # fmt: skip
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, list(allowed), n=2, cutoff=0.6)
                hint = f" Did you mean {', '.join(close)}?" if close else ""
                raise self.error(
                    f"unknown {what} key {key!r}.{hint} Allowed: {', '.join(sorted(allowed))}",
                    rf"^\s*{re.escape(key)}\s*=",
                )

    def value_error(self, key: str, value: Any, allowed: str) -> UserError:
        """An error naming the line, the key, the bad value and what is allowed."""
        shown = f'"{value}"' if isinstance(value, str) else str(value).lower()
        line = _line_of(self.text, rf"^\s*{re.escape(key)}\s*=.*{re.escape(shown)}")
        line = line or _line_of(self.text, re.escape(shown))
        line = line or _line_of(self.text, rf"^\s*{re.escape(key)}\s*=")
        where = f"{self.path}:{line}" if line else str(self.path)
        return UserError(f"{where}: {key} = {_describe(value)} is not allowed: {allowed}")

    def check_value(self, key: str, value: Any) -> Any:
        if key == "scenario":
            # The families' scenarios this driver has (code-size needs none).
            names = scenarios.scenario_names()
            choices = tuple(n for n in names
                            if scenarios.by_scenario(n).available(n, self.declared))  # fmt: skip
            allowed = scenarios.base.one_of(choices)(key, value, self.declared)
        else:
            allowed = scenarios.experiment_keys()[key].check(key, value, self.declared)
        if allowed is not None:
            raise self.value_error(key, value, allowed)
        return value

    def resolve(self, spec: str) -> Variant:
        return self.catalog.resolve(spec, self.path.parent)

    def check_number(self, data: dict[str, Any], key: str, default: Any, low: float,
                     high: float, whole: bool) -> Any:  # fmt: skip
        value = data.get(key, default)
        kinds = (int,) if whole else (int, float)
        if not isinstance(value, kinds) or isinstance(value, bool) or not low <= value <= high:
            what = "a whole number" if whole else "a number of seconds"
            raise self.value_error(key, value, f"{what}, {low:g}..{high:g}")
        return value

    def check_table(self, value: Any, key: str, array: bool = False) -> None:
        ok = (isinstance(value, list) and all(isinstance(v, dict) for v in value)) if array \
            else isinstance(value, dict)  # fmt: skip
        if not ok:
            shape = f"[[{key}]] blocks (tables)" if array else f"a [{key}] table"
            raise self.error(f"{key} must be {shape}, not {_describe(value)}",
                             rf"^\s*\[*{re.escape(key)}")  # fmt: skip

    def load(self) -> Experiment:
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            found = re.search(r"at line (\d+)", str(exc))
            where = f"{self.path}:{found.group(1)}" if found else str(self.path)
            raise UserError(f"{where}: malformed TOML: {exc}") from exc
        self.check_keys(data, TOP_KEYS, "experiment")
        question = data.get("question")
        if not isinstance(question, str) or not question.strip():
            raise self.error('an experiment opens with `question = "..."`: what it answers')
        repetitions = self.check_number(data, "repetitions", 5, 1, MAX_REPETITIONS, True)
        timeout = self.check_number(data, "timeout", 300, 1, MAX_TIMEOUT_S, False)
        mode = data.get("mode", "time")
        if mode not in MODES:
            raise self.error(f"mode must be one of {', '.join(MODES)}, not {_describe(mode)}",
                             r"^\s*mode\s*=")  # fmt: skip
        defaults = data.get("defaults", {})
        self.check_table(defaults, "defaults")
        per_scenario = data.get("per_scenario", {})
        self.check_table(per_scenario, "per_scenario")
        for name, table in per_scenario.items():
            self.check_table(table, f"per_scenario.{name}")
        for key in ("include", "exclude"):
            self.check_table(data.get(key, []), key, array=True)
        # One [matrix] table, or several [[matrix]] blocks expanded one after another.
        matrices = data.get("matrix", [])
        if not isinstance(matrices, dict):
            self.check_table(matrices, "matrix", array=True)
        matrices = [matrices] if isinstance(matrices, dict) else matrices
        every = point_keys()
        self.check_keys(defaults, every, "defaults")
        for matrix in matrices:
            self.check_keys(matrix, every, "matrix")
            for key, values in matrix.items():
                if not isinstance(values, list) or not values:
                    raise self.error(f"matrix {key} must be a non-empty list",
                                     rf"^\s*{key}\s*=")  # fmt: skip
        for entry in [*data.get("include", []), *data.get("exclude", [])]:
            self.check_keys(entry, every, "include/exclude")
        self.check_keys(per_scenario, scenarios.scenario_names(), "per_scenario")
        for table in per_scenario.values():
            self.check_keys(table, every, "per_scenario")
        # A point's own values (matrix or include) over its scenario's options over
        # [defaults]; exclusions look at the merged point.
        own: list[dict[str, Any]] = []
        for matrix in matrices:
            keys = list(matrix)
            own += [dict(zip(keys, combo, strict=True))
                    for combo in itertools.product(*(matrix[k] for k in keys))]  # fmt: skip
        excludes = data.get("exclude", [])
        raw = [self.merge(defaults, per_scenario, p) for p in own]
        raw = [p for p in raw if not any(_matches(p, ex) for ex in excludes)]
        raw += [self.merge(defaults, per_scenario, inc) for inc in data.get("include", [])]
        if self.variants is not None:
            raw = self.for_variants(raw, self.variants)
        points = []
        seen: dict[tuple[str, str], RunPoint] = {}
        for entry in raw:
            point = self.point(entry)
            if point.key in seen and self.variants is not None:
                continue  # the experiment's variants differed only there
            if point.key in seen:
                if (negotiates_no_key_exchange(point.options)
                        and ("group" in entry or "sigalg" in entry)) or (
                        authenticates_by_psk(point.options)
                        and any(k in entry for k in CERTIFICATE_KEYS)):  # fmt: skip
                    continue  # the same point once its group / sigalg / cert were dropped
                raise self.error(f"two points are the same: {point.name} on {point.variant}")
            seen[point.key] = point
            points.append(point)
        if not points:
            raise self.error("the matrix expands to no point")
        return Experiment(
            name=self.path.stem,
            path=self.path,
            text=self.text,
            question=question.strip(),
            repetitions=repetitions,
            timeout=float(timeout),
            points=points,
            mode=mode,
        )

    def for_variants(self, raw: list[dict[str, Any]], variants: list[str]) -> list[dict[str, Any]]:
        """Each point once per given variant (in place of the experiment's own), but the
        points a variant cannot run at all (code-size of a library with no such programs)."""
        resolved = {v: self.catalog.resolve(v) for v in variants}
        return [
            {**entry, "variant": variant}
            for entry in raw
            for variant in variants
            if entry.get("scenario") not in scenarios.scenario_names()
            or scenarios.by_scenario(str(entry["scenario"])).runs_on(resolved[variant])
        ]

    @staticmethod
    def merge(
        defaults: dict[str, Any], per_scenario: dict[str, Any], own: dict[str, Any]
    ) -> dict[str, Any]:
        scenario = own.get("scenario", defaults.get("scenario", ""))
        # A scenario of the wrong type is reported by check_value, after the merge.
        scenario_options = per_scenario.get(scenario, {}) if isinstance(scenario, str) else {}
        return {**defaults, **scenario_options, **own}

    def point(self, raw: dict[str, Any]) -> RunPoint:
        if "variant" not in raw:
            raise self.error("a point has no variant (set it in [matrix] or [defaults])")
        if "scenario" not in raw:
            raise self.error("a point has no scenario (set it in [matrix] or [defaults])")
        values = {k: self.check_value(k, v) for k, v in raw.items() if k != "variant"}
        if not isinstance(raw["variant"], str):
            raise self.value_error("variant", raw["variant"], "a variant name (tlsbench list "
                                   "variants)")  # fmt: skip
        try:
            variant = self.catalog.resolve(raw["variant"], self.path.parent)
        except UserError as exc:  # unknown line or feature: say where it is asked for
            raise self.value_error("variant", raw["variant"], str(exc)) from None
        scenario = values["scenario"]
        family = scenarios.by_scenario(scenario)
        family.check(self, scenario, values, variant)
        for each in scenarios.families():
            each.check_variant(self, scenario, values, variant)
        relevant = family.accepts(scenario, self.declared)
        options = {
            k: values[k] for k in scenarios.experiment_keys() if k in values and k in relevant
        }
        family.settle(self, scenario, options, values, variant)
        if negotiates_no_key_exchange(options):
            # Static RSA or PSK alone: no group is negotiated and nothing is signed, so neither
            # belongs in the point's name or stored options.
            options.pop("group", None)
            options.pop("sigalg", None)
        if authenticates_by_psk(options):
            # The key authenticates both sides: no certificate is sent or verified.
            for key in CERTIFICATE_KEYS:
                options.pop(key, None)
        return RunPoint(
            name=point_name(scenario, options),
            variant=variant.name,
            library=variant.library,
            scenario=scenario,
            options=options,
        )


def check_capabilities(points: list[RunPoint], infos: dict[str, dict[str, Any]]) -> None:
    """Refuses, before anything runs, the points a variant's driver declares it can never
    run: a TLS scenario (an interop peer and a load generator included) on a build whose
    `info` declares no TLS version, i.e. an AEAD-only library. `infos` maps a variant to its
    driver's `info` object; what one library merely lacks (a suite, a group) stays its
    "unsupported" at run time."""
    refused: dict[str, list[str]] = {}
    table = declared()
    for point in points:
        family = scenarios.by_scenario(point.scenario)
        if not family.runs_tls(point.scenario, table):
            continue
        for variant in [point.variant, *family.peer_variants(point)]:
            info = infos.get(variant)
            if info is not None and not info.get("versions"):
                refused.setdefault(variant, []).append(point.name)
    if refused:
        lines = []
        for variant, names in refused.items():
            reason = infos[variant].get("no_tls") or "its driver declares no TLS version"
            shown = ", ".join(names[:4]) + (f" ... ({len(names)} in all)" if len(names) > 4
                                             else "")  # fmt: skip
            lines.append(f"  {variant}: {reason}; asked for {shown}")
        tls = ", ".join(name for name in scenarios.scenario_names()
                        if scenarios.by_scenario(name).runs_tls(name, table))  # fmt: skip
        raise UserError(
            f"these variants cannot run TLS scenarios ({tls}):\n"
            + "\n".join(lines)
            + "\nUse them in aead points only: remove them from those points or add an "
            "[[exclude]]."
        )


def _matches(point: dict[str, Any], pattern: dict[str, Any]) -> bool:
    return all(point.get(k) == v for k, v in pattern.items())


def load(
    name_or_path: str, catalog: Catalog | None = None, variants: list[str] | None = None
) -> Experiment:
    """The experiment's points; with `variants` (canonical names), its points once for each
    of them in place of the variants it names (what `tlsbench ab` runs)."""
    return _Loader(find(name_or_path), catalog or Catalog(), variants).load()


def _fields(p: RunPoint) -> dict[str, str]:
    return {"variant": p.variant, "library": p.library, "scenario": p.scenario, "name": p.name,
            **{k: str(v) for k, v in p.options.items()}}  # fmt: skip


def only(points: list[RunPoint], filters: list[str]) -> list[RunPoint]:
    """--only KEY=VALUE filters (all must match; variant matches its canonical name)."""
    parsed = []
    for f in filters:
        key, sep, value = f.partition("=")
        every = point_keys()
        if not sep or key not in (*every, "library", "name"):
            raise UserError(
                f"--only takes KEY=VALUE with KEY among {', '.join((*every, 'library'))}"
            )
        parsed.append((key, value))

    kept = [p for p in points if all(_fields(p).get(k) == v for k, v in parsed)]
    if not kept:
        # Say what the experiment has for each key asked about (what --only could match).
        present = []
        for key in dict.fromkeys(k for k, _ in parsed if k != "name"):
            values = sorted({_fields(p)[key] for p in points if key in _fields(p)})
            present.append(f"{key}: {', '.join(values) if values else '(no point sets it)'}")
        raise UserError(
            f"--only {' '.join(filters)} leaves no point of the experiment"
            + (f"; it has {'; '.join(present)}" if present else "")
        )
    return kept
