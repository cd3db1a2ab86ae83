"""A fake tlsbench driver: the driver's command line in, its JSON out, no library at all.

Like hyperfine's mock executor, it stands in for the real program where only the
orchestration is under test (runner, experiments, store, shards, parallel points, reports):
it takes `SCENARIO --variant V [--option value]... [--json]` and `info --json`, checks the
options against the driver's own declaration (tests/fixtures/declared.json, which
tests/null/test_declared_scenarios.py keeps equal to the real driver's), and prints an
output of the real driver's shape: params with the declared defaults, every series the
scenario declares (one sample per iteration), heap figures from the heap program, the
calibration workload, what was negotiated, the exit code.

Its figures are made up (a fixed pseudo-random spread around round values): no test may
read a library's behaviour into them. Its cost is real: it sleeps
$TLSBENCH_FAKE_NS_PER_ITERATION (default 1000) ns per iteration, so that a point of many
iterations runs long, as a real one would, and a timeout or a signal finds it running.

$TLSBENCH_FAKE_FAULTS makes chosen points end badly: a comma-separated list of
`VARIANT/SCENARIO=FAULT` (`*` for any variant), FAULT one of `crash` (the driver kills
itself with SIGSEGV), `unsupported` (exit 3 with the reason), `failed` (a check fires:
exit 5) or `garbage` (output that is not JSON).

Usage: driver.py --program time|heap SCENARIO --variant V [options] [--json]
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

DECLARED = Path(__file__).resolve().parents[1] / "fixtures" / "declared.json"
CALIBRATION = "xorshift64* chain, 100000 steps, median of 9"
TSC_HZ = 2.6e9
# Rough magnitudes of the series by unit (the fake's figures mean nothing).
BASE = {
    "ns": 1000.0,
    "MB/s": 1000.0,
    "allocations": 1.0,
    "1/s": 500000.0,
    "s/GB": 1.0,
    "B": 30000.0,
}


def usage(message: str) -> int:
    print(f"tlsbench-driver (fake): {message}", file=sys.stderr)
    return 2


def parse(argv: list[str], declared: dict[str, Any]) -> tuple[dict[str, Any], bool] | str:
    """(options by command-line name, --json) or the usage error."""
    takes_value = {o["name"]: o["value"] for o in declared["options"]}
    options: dict[str, Any] = {}
    as_json = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            return f"unexpected argument {arg!r}"
        name, _, inline = arg[2:].partition("=")
        if name not in takes_value:
            return f"unknown option --{name}"
        if not takes_value[name]:
            if name == "json":
                as_json = True
            else:
                options[name] = True
            i += 1
            continue
        if inline:
            options[name] = inline
            i += 1
        elif i + 1 < len(argv):
            options[name] = argv[i + 1]
            i += 2
        else:
            return f"--{name} needs a value"
    return options, as_json


def fault_of(variant: str, scenario: str) -> str | None:
    for entry in filter(None, os.environ.get("TLSBENCH_FAKE_FAULTS", "").split(",")):
        where, _, fault = entry.partition("=")
        who, _, what = where.partition("/")
        if who in ("*", variant) and what == scenario:
            return fault
    return None


def number(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def main(argv: list[str]) -> int:
    declared = json.loads(DECLARED.read_text())
    program = "time"
    if argv[:1] == ["--program"]:
        program, argv = argv[1], argv[2:]
    if not argv:
        return usage("no scenario")
    scenario, rest = argv[0], argv[1:]
    table = {s["name"]: s for s in declared["scenario_table"]}
    if scenario not in table:
        return usage(f"unknown scenario {scenario!r}")
    parsed = parse(rest, declared)
    if isinstance(parsed, str):
        return usage(parsed)
    given, as_json = parsed
    entry = table[scenario]
    flags = {k for k, on in entry["flags"].items() if on}
    scopes = {o["name"]: o["scope"] for o in declared["options"]}
    for name in given:
        if scopes[name] == "named" and name not in entry["options"]:
            return usage(f"--{name} is not an option of {scenario}")
        if scopes[name] == "tls" and "tls" not in flags:
            return usage(f"--{name} is for the TLS scenarios")
    defaults = {o["name"]: o["default"] for o in declared["options"] if "default" in o}
    params = {k.replace("-", "_"): number(v) for k, v in
              {**defaults, **entry["defaults"], **given}.items()
              if k not in ("variant", "cert-dir", "port-file", "listen", "connect")}  # fmt: skip
    variant = str(given.get("variant", "?"))
    library = variant.split("-")[0].split(":")[0]
    iterations = int(params.get("iterations", 1))
    output: dict[str, Any] = {
        "schema": 1, "measure": program, "variant": variant, "library": library,
        "scenario": scenario, "params": params, "version": f"{library} (fake driver)",
    }  # fmt: skip
    if scenario == "info":
        output["info"] = {"version": output["version"], "build_options": [],
                          "versions": ["1.2", "1.3"], "suites": [], "groups": [],
                          "sigalgs": []}  # fmt: skip
        output["declared"] = declared
        output["exit"] = 0
        print(json.dumps(output))
        return 0
    if "two_process" in flags:
        output["error"] = {"stage": scenario, "message": "the fake driver runs one-process "
                           "scenarios only"}  # fmt: skip
        output["exit"] = 3
        print(json.dumps(output))
        return 3
    time.sleep(iterations * float(os.environ.get("TLSBENCH_FAKE_NS_PER_ITERATION", "1000")) / 1e9)
    fault = fault_of(variant, scenario)
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault == "garbage":
        print("{ this is not JSON")
        return 0
    rng = random.Random(f"{variant} {scenario} {sorted(params.items())} {program}")
    output["calibration"] = {"workload": CALIBRATION,
                             "before_ns": 250000.0 * rng.uniform(0.99, 1.01),
                             "after_ns": 250000.0 * rng.uniform(0.99, 1.01)}  # fmt: skip
    output["tsc_hz"] = TSC_HZ
    if fault in ("unsupported", "failed"):
        code = 3 if fault == "unsupported" else 5
        output["error"] = {"stage": "handshake", "message": f"the fake driver was told: {fault}"}
        output["exit"] = code
        print(json.dumps(output) if as_json else output["error"]["message"])
        print(f"tlsbench-driver (fake): {fault} (exit {code})", file=sys.stderr)
        return code
    if "tls" in flags:
        output["negotiated"] = {"version": params.get("tls"), "suite": params.get("suite"),
                                "group": params.get("group"), "sigalg": params.get("sigalg"),
                                "resumed": scenario == "resume"}  # fmt: skip
        output["wire"] = {"full": {"client": {"bytes_sent": 300, "records_sent": 3},
                                   "server": {"bytes_sent": 1500, "records_sent": 5},
                                   "client_hello_bytes": 250, "round_trips": 1,
                                   "flights": [{"from": "client", "bytes": 250, "records": 1},
                                               {"from": "server", "bytes": 1500, "records": 5},
                                               {"from": "client", "bytes": 50,
                                                "records": 2}]}}  # fmt: skip
    heap_run = program == "heap" and "heap" in flags
    output["heap"] = None
    if heap_run:
        side = {"start": 0, "ctx": 100, "peak": 20000, "retained": 10000,
                "peak_minus_start": 20000, "retained_minus_start": 10000, "conn_peak": 19900,
                "conn_retained": 9900, "handshake_allocs": 50, "stack": 4096,
                "usable": {"start": 0, "ctx": 104, "peak": 20480, "retained": 10240}}  # fmt: skip
        output["heap"] = {"global": {"live": 0, "peak": 0, "allocs": 0},
                          "client": dict(side), "server": dict(side),
                          "process": {"peak": 60000, "peak_usable": 61440,
                                      "allocs": 120}}  # fmt: skip
    samples: dict[str, list[float]] = {}
    for series in entry["series"]:
        when = series.get("when")
        if when == "heap driver" and not heap_run:
            continue
        if when == "timing driver" and program != "time":
            continue
        if when not in (None, "heap driver", "timing driver"):
            continue  # a series of one role or option only
        base = BASE.get(series["unit"], 1.0)
        if series["unit"] == "allocations":  # whole allocations, as a library makes them
            samples[series["name"]] = [1.0] * iterations
            continue
        samples[series["name"]] = [round(base * rng.uniform(0.9, 1.1), 3)
                                   for _ in range(iterations)]  # fmt: skip
    if scenario == "connections":  # what the N connections held, as the real driver says
        held = {"before": 152, "after": 49544, "peak": 49544, "before_usable": 152,
                "after_usable": 49568, "peak_usable": 49568, "blocks": 3}  # fmt: skip
        output["connections"] = {
            "open": int(params["connections"]),
            "client": dict(held) if heap_run else None,
            "server": dict(held) if heap_run else None,
            "rss": None if heap_run else {"before": 1789952, "after": 1953792, "peak": 1953792},
        }
    if scenario == "aead":
        names = [params["aead"]] if params.get("aead") else declared["aeads"]
        output["aead"] = [
            {"aead": name, "payload": int(params.get("payload", 16384)), "ad": 12,
             "runs": iterations, "tsc_cycles_per_byte": rng.uniform(1, 2),
             "open_tsc_cycles_per_byte": rng.uniform(1, 2), "ns_per_byte": rng.uniform(0.4, 0.8),
             "MBps": rng.uniform(1000, 2000), "batch": 16}
            for name in names
        ]  # fmt: skip
    output["samples"] = samples
    output["summary"] = {
        name: {"unit": next(s["unit"] for s in entry["series"] if s["name"] == name),
               "n": len(v), "min": min(v), "median": sorted(v)[len(v) // 2], "max": max(v)}
        for name, v in samples.items() if v
    }  # fmt: skip
    output["warnings"] = ["fake driver: made-up figures"]
    output["exit"] = 0
    print(json.dumps(output) if as_json else f"{scenario} done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
