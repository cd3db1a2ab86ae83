"""Every host line's cost by function and atomic operations per handshake, as the tables of
docs/results.md ("Cost by function and atomics per handshake"): a TLS 1.3 full handshake
(TLS_AES_128_GCM_SHA256, x25519, RSA-2048, the client verifying the server), ITERATIONS
measured after the driver's warm-up, each side counted under callgrind as instruction mode
counts it. A line's figures are those of

    ./tlsbench explain LINE handshake --iterations 20 [its options below]

(the same function underneath: scenarios/modes.count_costs). Then what OpenSSL 3.0 spends
per client handshake that 1.1.1 does not, and where (core/costs.diff_costs of the two).

Usage: .venv/bin/python bench/explain_lines.py [ITERATIONS] [--json FILE] [--from FILE]

--json FILE keeps every line's cost by function; --from FILE prints the tables of such a
file again (its counts, today's groups: after a change of the rule table) without counting.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tlsbench.builds.build import Builder
from tlsbench.builds.variants import Catalog
from tlsbench.core.costs import SideCosts, diff_costs, without_parameters
from tlsbench.core.points import RunPoint
from tlsbench.scenarios import modes

# (line as the table names it, variant, driver options, the fixed random stream reaches it)
LINES: list[tuple[str, str, list[str], bool]] = [
    ("OpenSSL 1.1.1", "openssl-1.1.1w", [], True),
    ("OpenSSL 3.0 (Debian's)", "openssl-system", [], True),
    ("OpenSSL 3.0", "openssl-3.0.x", [], True),
    ("OpenSSL 3.5", "openssl-3.5.x", [], True),
    ("OpenSSL 3.6", "openssl-3.6.x", [], True),
    ("AWS-LC", "aws-lc-5.12.0", [], True),
    ("BoringSSL", "boringssl-5.4.0", [], True),
    ("rustls (aws-lc-rs)", "rustls-ffi-0.15.7", ["--sigalg", "rsa_pss_rsae_sha512"], True),
    ("wolfSSL", "wolfssl-5.7.2", [], True),
    ("GnuTLS 3.8", "gnutls-3.8.x", [], True),
    ("GnuTLS 3.7 (Debian's)", "gnutls-system", [], False),
    ("mbedTLS 3.6", "mbedtls-3.6.6", [], True),
    ("NSS", "nss-3.110", [], False),
    ("Botan 3", "botan-3.x", [], True),
    ("s2n-tls", "s2n-tls-1.7.6", [], True),
    ("BearSSL (TLS 1.2)", "bearssl-0.6", ["--tls", "1.2", "--suite",
                                          "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"], True),
]  # fmt: skip
TOP_GROUPS = 3
TOP_FUNCTIONS = 3


def count(spec: str, options: list[str], deterministic: bool, iterations: int
          ) -> dict[str, SideCosts]:  # fmt: skip
    variant = Catalog().resolve(spec)
    build = Builder(quiet=True).build(variant)
    point = RunPoint("explain", variant.name, variant.library, "handshake", {})
    outcome, by_side = modes.count_costs(point, build, 300, ["--iterations", str(iterations),
                                                              *options], deterministic)  # fmt: skip
    if outcome.status != "ok":
        error = ((outcome.output or {}).get("error") or {}).get("message")
        raise SystemExit(f"{spec}: {error or outcome.stderr_tail[-500:]}")
    return by_side


def _n(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:,.1f}"


def _short(group_label: str) -> str:
    return group_label.split(" (")[0] if "no symbols" not in group_label else \
        group_label.split(" ")[0]  # fmt: skip


def groups_cell(costs: SideCosts) -> str:
    ranked = sorted((g for g in costs.groups() if g.instructions),
                    key=lambda g: -g.instructions)[:TOP_GROUPS]  # fmt: skip
    return ", ".join(f"{_short(g.label)} {100 * g.instructions / costs.instructions:.0f} %"
                     for g in ranked)  # fmt: skip


def functions_cell(costs: SideCosts, measure: str = "instructions") -> str:
    total = costs.instructions if measure == "instructions" else costs.atomics
    if not total:
        return "none"
    return ", ".join(f"`{without_parameters(f.name)}` {100 * f.count(measure) / total:.0f} %"
                     for f in costs.top(TOP_FUNCTIONS, measure))  # fmt: skip


def main(argv: list[str]) -> int:
    iterations = int(argv[0]) if argv and argv[0].isdigit() else 20
    out_file = argv[argv.index("--json") + 1] if "--json" in argv else None
    measured: dict[str, dict[str, SideCosts]] = {}
    if "--from" in argv:
        with open(argv[argv.index("--from") + 1], encoding="utf-8") as saved:
            measured = {spec: {side: SideCosts.from_json(data).regrouped()
                               for side, data in sides.items()}
                        for spec, sides in json.load(saved).items()}  # fmt: skip
    for _, spec, options, deterministic in LINES:
        if spec not in measured:
            measured[spec] = count(spec, options, deterministic, iterations)
            print(f"{spec}: counted", file=sys.stderr)
            save(out_file, measured)  # each line as it is counted: a stop keeps them
    print(
        "| line | variant | client instructions | client atomics | server instructions | "
        "server atomics | the client's atomics are in |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for label, spec, _, deterministic in LINES:
        c, s = measured[spec]["client"], measured[spec]["server"]
        mark = "" if deterministic else " (own randomness)"
        print(
            f"| {label}{mark} | `{spec}` | {_n(c.per_operation(c.instructions))} | "
            f"{_n(c.per_operation(c.atomics))} | {_n(s.per_operation(s.instructions))} | "
            f"{_n(s.per_operation(s.atomics))} | {functions_cell(c, 'atomics')} |"
        )
    print()
    print("| line | side | largest groups (share of instructions) | top functions |")
    print("| --- | --- | --- | --- |")
    for label, spec, _, _ in LINES:
        for side in ("client", "server"):
            costs = measured[spec][side]
            print(f"| {label} | {side} | {groups_cell(costs)} | {functions_cell(costs)} |")
    print()
    old, new = measured["openssl-1.1.1w"]["client"], measured["openssl-3.0.x"]["client"]
    for measure in ("instructions", "atomics"):
        diff = diff_costs(old, new, top=10, measure=measure)
        print(
            f"OpenSSL 3.0 against 1.1.1, client, by {measure}: "
            f"{_n(diff.before_total)} -> {_n(diff.after_total)}"
        )
        print("| group | 1.1.1 | 3.0 | change |\n| --- | ---: | ---: | ---: |")
        for c in diff.groups:
            print(
                f"| {c.label} | {_n(c.before[measure])} | {_n(c.after[measure])} | "
                f"{c.change(measure):+,.0f} |"
            )
        print("\n| function | group | 1.1.1 | 3.0 | change |\n| --- | --- | ---: | ---: | ---: |")
        for c in diff.functions:
            print(
                f"| `{c.name}` | {c.label} | {_n(c.before[measure])} | {_n(c.after[measure])} "
                f"| {c.change(measure):+,.0f} |"
            )
        print()
    return 0


def save(out_file: str | None, measured: dict[str, dict[str, SideCosts]]) -> None:
    if out_file:
        document: dict[str, Any] = {spec: {side: costs.to_json() for side, costs in sides.items()}
                                    for spec, sides in measured.items()}  # fmt: skip
        with open(out_file, "w", encoding="utf-8") as out:
            json.dump(document, out)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
