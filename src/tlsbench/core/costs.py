"""Cost by function: one side's instructions, atomic operations and calls per function and
per group, and what changed between two such costs.

Pure: nothing here measures or reads anything but the rule table beside this module
(`cost_groups.toml`), which names the groups and the rules that give a function its group,
one table for the host (callgrind's counts, `tlsbench.driver.callgrind`) and the firmware
(QEMU's, `tlsbench.embedded.profile`).

- `group_of(name, ...)`: a function's group, by the table's first matching rule;
- `FunctionCost`, `SideCosts`: what one side's measured calls cost, per function, with its
  totals; the functions sum exactly to the totals (checked when one is made), and so do the
  groups (`SideCosts.groups`);
- `diff_costs(before, after)`: the functions and groups whose counts per operation changed
  most, in both directions, with their counts before and after (what `ab` names).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RULES_FILE = Path(__file__).with_name("cost_groups.toml")
SCOPES = ("host", "firmware")
# What a rule may match: the function's name, its source file's base name, its object
# file's base name, where it comes from ("libc", "firmware", "harness", "library").
SUBJECTS = ("symbol", "file", "object", "origin")
OTHER = "other"
# The group of a function from an object without a symbol table (Debian's shared
# libraries): its library file, since the names inside it are too few to group by.
OBJECT_GROUP_PREFIX = "object:"
# The suffixes GCC gives the copies of a function it specialises or splits.
CLONE_SUFFIX = re.compile(r"(\.(part|constprop|isra|cold|lto_priv|localalias|clone)(\.\d+)?)+$")
# What a diff sorts by, and the counts each function and group carries.
MEASURES = ("instructions", "atomics", "calls")


@dataclass(frozen=True)
class Group:
    key: str
    label: str
    scopes: tuple[str, ...]
    labels: dict[str, str]  # scope -> its own label, where it says it otherwise

    def label_in(self, scope: str) -> str:
        return self.labels.get(scope, self.label)


@dataclass(frozen=True)
class Rule:
    group: str
    subject: str  # one of SUBJECTS
    pattern: str
    scopes: tuple[str, ...]

    @functools.cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


@dataclass(frozen=True)
class RuleTable:
    groups: tuple[Group, ...]
    rules: tuple[Rule, ...]

    def labels(self, scope: str) -> dict[str, str]:
        """The groups of a scope, key -> label, in the order a split shows them."""
        return {g.key: g.label_in(scope) for g in self.groups if scope in g.scopes}


def parse_rules(text: str, where: str = "cost_groups.toml") -> RuleTable:
    """The rule table from its TOML text; ValueError says which entry is wrong."""
    data = tomllib.loads(text)
    groups = []
    for entry in data.get("group", []):
        scopes = tuple(entry.get("scopes", SCOPES))
        if not set(scopes) <= set(SCOPES) or not entry.get("key") or not entry.get("label"):
            raise ValueError(f"{where}: group {entry!r} needs a key, a label and scopes "
                             f"among {', '.join(SCOPES)}")  # fmt: skip
        labels = {s: entry[f"{s}_label"] for s in SCOPES if f"{s}_label" in entry}
        groups.append(Group(entry["key"], entry["label"], scopes, labels))
    keys = {g.key for g in groups}
    if OTHER not in keys:
        raise ValueError(f"{where}: the group {OTHER!r} must be declared")
    rules = []
    for entry in data.get("rule", []):
        subjects = [s for s in SUBJECTS if s in entry]
        if entry.get("group") not in keys or len(subjects) != 1:
            raise ValueError(f"{where}: rule {entry!r} needs a declared group and one subject "
                             f"among {', '.join(SUBJECTS)}")  # fmt: skip
        scopes = tuple(entry.get("scopes", SCOPES))
        rule = Rule(entry["group"], subjects[0], entry[subjects[0]], scopes)
        try:
            rule.compiled  # noqa: B018 (a bad pattern is the table's error, said here)
        except re.error as exc:
            raise ValueError(f"{where}: rule {entry!r}: {exc}") from None
        rules.append(rule)
    return RuleTable(tuple(groups), tuple(rules))


@functools.cache
def rule_table() -> RuleTable:
    return parse_rules(RULES_FILE.read_text(encoding="utf-8"))


def group_labels(scope: str) -> dict[str, str]:
    """The groups of a scope ("host" or "firmware"), key -> label, in display order."""
    return rule_table().labels(scope)


@functools.cache
def group_of(name: str, source: str = "", origin: str = "library", obj: str = "",
             scope: str = "host") -> str:  # fmt: skip
    """The group of a function: the first rule of the scope that matches, else "other".

    `name` the function's name, `source` its source file's base name ("" where unknown),
    `origin` "libc", "firmware", "harness" or "library", `obj` its object file's base name."""
    subjects: dict[str, tuple[str, ...]] = {
        "symbol": (name,),
        "file": (source,),
        "origin": (origin,),
        "object": (obj,),
    }
    if scope == "host":
        # GCC's clones (`bn_mul_words.part.0`) are their function's; a C++ function
        # (BoringSSL's `x25519_scalar_mult_generic(unsigned char*, ...)`) is also its name
        # without its parameters, and a C++ file (`curve25519.cc`) also the C file's name.
        plain = CLONE_SUFFIX.sub("", name)
        subjects["symbol"] = tuple(dict.fromkeys((plain, without_parameters(plain))))
        if source.endswith(".cc"):
            subjects["file"] = (source, source.removesuffix(".cc") + ".c")
    for rule in rule_table().rules:
        if scope in rule.scopes and any(rule.compiled.fullmatch(s) for s in subjects[rule.subject]):
            return rule.group
    return OTHER


def without_parameters(name: str) -> str:
    """A C++ function's name without its parameter list (and a trailing const):
    `bssl::tls13_process(bssl::SSL_HANDSHAKE*) const` -> `bssl::tls13_process`; a name
    with none is itself."""
    text = name.removesuffix(" const")
    if not text.endswith(")"):
        return name
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return text[:i] if i > 0 else name
    return name


def object_group(obj: str) -> str:
    """The group of every function of an object without symbols: its file."""
    return OBJECT_GROUP_PREFIX + obj


def label_of(group: str, scope: str = "host") -> str:
    if group.startswith(OBJECT_GROUP_PREFIX):
        return f"{group.removeprefix(OBJECT_GROUP_PREFIX)} (no symbols: the whole library file)"
    return group_labels(scope).get(group, group)


# ---------------------------------------------------------------------------- costs


@dataclass(frozen=True)
class FunctionCost:
    """One function's self cost (its own instructions, not its callees') in one side's
    measured calls, over every measured operation."""

    name: str
    source: str  # the source file's base name ("" where nothing says)
    object: str  # the object file's base name: a library, the driver executable
    group: str
    instructions: int
    atomics: int  # LOCK-prefixed instructions (callgrind's global bus events)
    calls: int  # calls made to it in the measured calls
    origin: str = "library"  # "libc", "harness", "firmware" or "library" (group_of's)

    def count(self, measure: str) -> int:
        return int(getattr(self, measure))


@dataclass(frozen=True)
class GroupCost:
    group: str
    label: str
    instructions: int
    atomics: int
    calls: int
    functions: int  # how many functions it holds

    def count(self, measure: str) -> int:
        return int(getattr(self, measure))


@dataclass(frozen=True)
class SideCosts:
    """What one side's measured calls cost, function by function: `operations` measured
    operations (handshakes, records) in all. The functions sum exactly to `instructions` and
    `atomics` (checked here: a split that loses a count is an error, never a figure)."""

    side: str
    operations: int
    instructions: int
    atomics: int
    functions: tuple[FunctionCost, ...]
    # Objects without a symbol table: their functions are grouped by the object's file.
    unsymbolised: tuple[str, ...] = ()
    scope: str = "host"
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.operations <= 0:
            raise ValueError(f"{self.side}: {self.operations} operations: nothing to divide by")
        for measure in ("instructions", "atomics"):
            counted = sum(f.count(measure) for f in self.functions)
            if counted != getattr(self, measure):
                raise ValueError(f"{self.side}: the functions' {measure} sum to {counted}, "
                                 f"the total is {getattr(self, measure)}")  # fmt: skip

    def per_operation(self, count: float) -> float:
        return count / self.operations

    def top(self, n: int, measure: str = "instructions") -> list[FunctionCost]:
        """The n functions that cost most by `measure`, largest first."""
        ranked = sorted(self.functions, key=lambda f: (-f.count(measure), f.name, f.object))
        return [f for f in ranked[:n] if f.count(measure)]

    def groups(self) -> list[GroupCost]:
        """Every group of the scope (in the table's order; empty ones too), then the
        unsymbolised objects' groups, each summing its functions: they sum to the totals."""
        sums: dict[str, list[int]] = {key: [0, 0, 0, 0] for key in group_labels(self.scope)}
        for f in self.functions:
            row = sums.setdefault(f.group, [0, 0, 0, 0])
            row[0] += f.instructions
            row[1] += f.atomics
            row[2] += f.calls
            row[3] += 1
        found = [GroupCost(g, label_of(g, self.scope), *row) for g, row in sums.items()]
        assert sum(g.instructions for g in found) == self.instructions
        assert sum(g.atomics for g in found) == self.atomics
        return found

    def regrouped(self) -> SideCosts:
        """The same counts with every function's group by today's rule table: a cost
        stored before a rule changed reads as one measured now would (so that two stored
        costs are compared group for group)."""
        unsymbolised = set(self.unsymbolised)
        functions = tuple(
            dataclasses.replace(f, group=object_group(f.object)
                                if f.object in unsymbolised and f.origin != "libc"
                                else group_of(f.name, f.source, f.origin, f.object, self.scope))
            for f in self.functions
        )  # fmt: skip
        return dataclasses.replace(self, functions=functions)

    def to_json(self) -> dict[str, Any]:
        """The stored form: totals, then one row per function with a count."""
        return {
            "side": self.side,
            "operations": self.operations,
            "instructions": self.instructions,
            "atomics": self.atomics,
            "unsymbolised": list(self.unsymbolised),
            "scope": self.scope,
            "notes": list(self.notes),
            "columns": ["name", "source", "object", "group", "instructions", "atomics", "calls",
                        "origin"],
            "functions": [[f.name, f.source, f.object, f.group, f.instructions, f.atomics,
                           f.calls, f.origin] for f in self.functions],
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SideCosts:
        return cls(
            side=str(data["side"]),
            operations=int(data["operations"]),
            instructions=int(data["instructions"]),
            atomics=int(data["atomics"]),
            functions=tuple(FunctionCost(str(row[0]), str(row[1]), str(row[2]), str(row[3]),
                                         int(row[4]), int(row[5]), int(row[6]),
                                         str(row[7]) if len(row) > 7 else "library")
                            for row in data["functions"]),
            unsymbolised=tuple(data.get("unsymbolised", ())),
            scope=str(data.get("scope", "host")),
            notes=tuple(data.get("notes", ())),
        )  # fmt: skip


def side_costs(side: str, operations: int, functions: Iterable[FunctionCost],
               unsymbolised: Iterable[str] = (), scope: str = "host",
               notes: Iterable[str] = ()) -> SideCosts:  # fmt: skip
    """A side's costs from its functions, the totals their sums, most instructions first."""
    listed = sorted(functions, key=lambda f: (-f.instructions, -f.atomics, f.name, f.object))
    return SideCosts(side, operations, sum(f.instructions for f in listed),
                     sum(f.atomics for f in listed), tuple(listed), tuple(unsymbolised), scope,
                     tuple(notes))  # fmt: skip


# ---------------------------------------------------------------------------- diffs


@dataclass(frozen=True)
class Change:
    """One function's or group's counts per operation before and after."""

    name: str  # the function's name, or the group's key
    label: str  # the group of a function, or the label of a group
    object: str  # the function's object file ("" for a group)
    before: dict[str, float]  # measure -> per operation
    after: dict[str, float]

    def change(self, measure: str) -> float:
        return self.after[measure] - self.before[measure]


@dataclass(frozen=True)
class CostDiff:
    """What moved between two costs of one side, sorted by `measure`'s change, largest
    first in absolute terms (both directions)."""

    measure: str
    before_total: float
    after_total: float
    functions: tuple[Change, ...]
    groups: tuple[Change, ...]

    def to_json(self) -> dict[str, Any]:
        def rows(changes: tuple[Change, ...]) -> list[dict[str, Any]]:
            return [{"name": c.name, "label": c.label, "object": c.object, "before": c.before,
                     "after": c.after, "change": {m: c.change(m) for m in MEASURES}}
                    for c in changes]  # fmt: skip

        return {"measure": self.measure, "before": self.before_total, "after": self.after_total,
                "functions": rows(self.functions), "groups": rows(self.groups)}  # fmt: skip


def _per_operation(costs: SideCosts, counts: Iterable[int]) -> dict[str, float]:
    return {m: c / costs.operations for m, c in zip(MEASURES, counts, strict=True)}


def diff_costs(before: SideCosts, after: SideCosts, top: int = 10,
               measure: str = "instructions") -> CostDiff:  # fmt: skip
    """The `top` functions and groups whose count of `measure` per operation changed most
    (up or down), with every measure before and after. A function is the same function
    when its name and object file are (a build of another commit moves its address, not
    its name); one present on one side only counts 0 on the other."""
    if measure not in MEASURES:
        raise ValueError(f"measure {measure!r}: one of {', '.join(MEASURES)}")
    zero = (0, 0, 0)

    def table(costs: SideCosts) -> dict[tuple[str, str], tuple[tuple[int, int, int], str]]:
        found: dict[tuple[str, str], tuple[list[int], str]] = {}
        for f in costs.functions:
            row, _ = found.setdefault((f.name, f.object), ([0, 0, 0], f.group))
            row[0] += f.instructions
            row[1] += f.atomics
            row[2] += f.calls
        return {k: ((r[0], r[1], r[2]), g) for k, (r, g) in found.items()}

    a, b = table(before), table(after)
    functions = []
    for key in dict.fromkeys([*a, *b]):
        counts_a, group_a = a.get(key, (zero, ""))
        counts_b, group_b = b.get(key, (zero, ""))
        functions.append(Change(key[0], group_b or group_a, key[1],
                                _per_operation(before, counts_a),
                                _per_operation(after, counts_b)))  # fmt: skip
    groups_a = {g.group: g for g in before.groups()}
    groups_b = {g.group: g for g in after.groups()}
    groups = []
    for group in dict.fromkeys([*groups_a, *groups_b]):
        ga, gb = groups_a.get(group), groups_b.get(group)
        known = gb or ga
        label = known.label if known is not None else group
        groups.append(Change(group, label, "",
                             _per_operation(before, _counts(ga) if ga else zero),
                             _per_operation(after, _counts(gb) if gb else zero)))  # fmt: skip

    def ranked(changes: list[Change]) -> tuple[Change, ...]:
        moved = [c for c in changes if c.change(measure) != 0]
        moved.sort(key=lambda c: (-abs(c.change(measure)), c.name, c.object))
        return tuple(moved[:top])

    return CostDiff(measure, before.per_operation(_total(before, measure)),
                    after.per_operation(_total(after, measure)), ranked(functions),
                    ranked(groups))  # fmt: skip


def _counts(group: GroupCost) -> tuple[int, int, int]:
    return group.instructions, group.atomics, group.calls


def _total(costs: SideCosts, measure: str) -> int:
    return sum(f.count(measure) for f in costs.functions)
