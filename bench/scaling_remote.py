"""The `scaling` experiment's driver runs on another machine with more cores: pack the
drivers here, play them there, tabulate the figures here.

`tlsbench run scaling` needs the project's Python environment and library builds on the
machine it measures. A many-core machine lent for a few minutes has neither (no network,
another distribution, no time to build), so this script splits the experiment in three:

- `pack` (here, with the project's environment): loads experiments/scaling.toml, keeps the
  points asked for (--variants, --certs, --scenarios), builds each variant (or takes it
  from the cache), and writes a bundle: each variant's timing driver (statically linked
  against its library; the few shared libraries a driver needs beyond the C and C++
  runtime are copied beside it), the certificates, and plan.json: every point with the
  exact driver command lines `tlsbench run scaling` runs for it (the timing run and the
  --locks run of a threads point, the one-thread command a processes point starts T
  times), the tlsbench commit, and each build's key, source archive hash and driver
  sha256, so that every figure traces back to its code and options.
- `play` (there, Python's standard library only): runs the plan's points, repetition by
  repetition, in a shuffled order per repetition, each command bounded by --timeout and
  the whole play by --deadline (no new point starts after it), skipping points with more
  threads than the machine's CPUs as the scaling family does, and appends one JSON line
  per run to results.jsonl as it goes (nothing is lost when the play is cut short). It
  records the machine first: CPU model, CPUs usable, kernel.
- `table` (here or there): checks every run negotiated what its point asked (a run that
  did not is an error, never a sample), then prints, per variant and job, the total
  handshakes/s at each T for the three models (medians over repetitions), the efficiency
  against T x the T = 1 figure of the same model, threads against the process baseline,
  and the lock acquisitions per handshake and side.

Usage:
  .venv/bin/python bench/scaling_remote.py pack --out DIR [--variants V,...]
      [--certs rsa2048,...] [--scenarios scaling-handshake,...] [--repetitions N]
  python3 bench/scaling_remote.py play DIR --out RESULTS [--deadline S] [--timeout S]
  python3 bench/scaling_remote.py table RUN [RUN ...]   (RUN: a folder of plan.json and
      results.jsonl, or their .xz; bench/data/scaling-16core/ holds the figures of docs/results.md)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import json
import lzma
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODELS = ("shared", "per-thread", "processes")
# The series a played run keeps whole: the rates. The per-handshake series (T x iterations
# values each) stay in the driver's summary as medians.
KEPT_SERIES = ("total_handshakes_per_s", "thread_handshakes_per_s")
ACQUIRING = ("mutex", "rwlock_read", "rwlock_write")
# Shared libraries every machine of the x86-64 Linux family has; any other a driver links
# to travels in the bundle's lib/ folder.
BASE_LIBRARIES = ("linux-vdso", "libc.so", "libm.so", "ld-linux", "libgcc_s", "libpthread",
                  "libdl.so", "librt.so", "libstdc++")  # fmt: skip


# -- pack (needs the project's environment) -------------------------------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def extra_libraries(program: Path) -> list[Path]:
    """The shared libraries `program` loads beyond the base ones, resolved here."""
    out = subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=True)
    found = []
    for line in out.stdout.splitlines():
        parts = line.split("=>")
        if len(parts) == 2 and not any(b in parts[0] for b in BASE_LIBRARIES):
            found.append(Path(parts[1].split("(")[0].strip()))
    return found


def relative_command(command: list[str], program: Path, cert_root: Path, folder: str) -> list[str]:
    """The driver command with the paths of this machine replaced by the bundle's."""
    replaced = {str(program): f"bin/{folder}/tlsbench-driver", str(cert_root): "certs"}
    return [replaced.get(arg, arg) for arg in command]


def pack(opts: argparse.Namespace) -> int:
    from tlsbench.builds import certs
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.core.paths import commit_id
    from tlsbench.driver.drive import driver_command
    from tlsbench.run import experiments

    catalog = Catalog()
    experiment = experiments.load("scaling", catalog)
    wanted = {catalog.resolve(v).name for v in opts.variants.split(",")} if opts.variants else None
    points = [p for p in experiment.points
              if (wanted is None or p.variant in wanted)
              and p.options.get("cert", "rsa2048") in opts.certs.split(",")
              and p.scenario in opts.scenarios.split(",")]  # fmt: skip
    if not points:
        sys.exit("scaling_remote: no point of experiments/scaling.toml matches the filters")
    out = Path(opts.out)
    if out.exists():
        shutil.rmtree(out)
    (out / "lib").mkdir(parents=True)
    builder = Builder(quiet=True)
    builds: dict[str, Any] = {}
    plan_points = []
    for variant in dict.fromkeys(p.variant for p in points):
        build = builder.build(catalog.resolve(variant))
        program = build.program("tlsbench-driver")
        folder = variant.replace(":", "_").replace("=", "-").replace(",", "_")
        (out / "bin" / folder).mkdir(parents=True)
        shutil.copy2(program, out / "bin" / folder / "tlsbench-driver")
        # Debug sections only: the code that runs is the same, the bundle half the size.
        subprocess.run(["strip", "--strip-debug", str(out / "bin" / folder / "tlsbench-driver")],
                       check=True)  # fmt: skip
        for library in extra_libraries(program):
            shutil.copy2(library, out / "lib" / library.name)
        builds[variant] = {"folder": folder, "key": build.key,
                           "version": build.manifest.get("version"),
                           "source": build.manifest.get("source"),
                           "driver_sha256": sha256(program),
                           "bundled_sha256": sha256(out / "bin" / folder / "tlsbench-driver"),
                           }  # fmt: skip
    cert_root = None
    for point in points:
        build = builder.build(catalog.resolve(point.variant))
        model = point.options.get("contexts", "shared")
        threads = int(point.options.get("threads", 1))
        options = {k: v for k, v in point.options.items() if k != "contexts"}
        if model == "processes":
            options["threads"] = 1
        else:
            options["contexts"] = model
        args = dataclasses.replace(point, options=options).driver_args()
        scenario = {"scaling-handshake": "handshake", "scaling-resume": "resume"}[point.scenario]
        command = driver_command(build, scenario, [*args, "--json"])
        cert_root = certs.cert_dir(point.options.get("cert", "rsa2048")).parent
        command = relative_command(command, build.program("tlsbench-driver"), cert_root,
                                   builds[point.variant]["folder"])  # fmt: skip
        runs = {"timed": command} if model == "processes" else {
            "timed": command, "locks": [*command[:-1], "--locks", "--json"]}  # fmt: skip
        plan_points.append({"variant": point.variant, "name": point.name,
                            "scenario": point.scenario, "options": point.options,
                            "model": model, "threads": threads, "runs": runs})  # fmt: skip
    assert cert_root is not None
    shutil.copytree(cert_root, out / "certs")
    plan = {"commit": commit_id(), "experiment": "scaling", "repetitions": opts.repetitions,
            "builds": builds, "points": plan_points}  # fmt: skip
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    shutil.copy2(Path(__file__), out / "scaling_remote.py")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{len(plan_points)} points, {len(builds)} variants, {size / 2**20:.1f} MiB in {out}")
    return 0


# -- play (standard library only: it runs where the project is not installed) ---------------


def machine() -> dict[str, Any]:
    model = ""
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpu_model": model, "cpus": len(os.sched_getaffinity(0)), "kernel": platform.release(),
            "host": platform.node(), "python": platform.python_version()}  # fmt: skip


def run_one(command: list[str], bundle: Path, timeout: float) -> dict[str, Any]:
    # As the runner does (driver/drive.py): no stray library or allocator switch.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENSSL_", "GNUTLS_", "NETTLE_", "WOLFSSL_", "MBEDTLS_", "MALLOC_"))
        and k not in ("GLIBC_TUNABLES", "LD_PRELOAD", "LD_BIND_NOW", "SSLKEYLOGFILE")
    }
    env["LD_LIBRARY_PATH"] = str(bundle / "lib")
    started = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=bundle, capture_output=True, text=True, env=env,
                              timeout=timeout, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"killed after {timeout:.0f} s"}
    result: dict[str, Any] = {"exit": proc.returncode, "seconds": time.monotonic() - started}
    try:
        result["output"] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        result["output"] = None
    if result["output"]:
        # Per-handshake series (T x iterations values) would make the file too large to
        # bring back; the summary keeps their medians, the rates keep every value.
        samples = result["output"].pop("samples", {})
        result["output"]["samples"] = {k: v for k, v in samples.items() if k in KEPT_SERIES}
    result["status"] = "ok" if proc.returncode == 0 and result["output"] else "failed"
    if result["status"] != "ok":
        result["stderr"] = proc.stderr[-2000:]
    return result


def play_point(point: dict[str, Any], bundle: Path, timeout: float) -> dict[str, Any]:
    if point["model"] == "processes":
        count = point["threads"]
        with concurrent.futures.ThreadPoolExecutor(count) as pool:
            outs = list(pool.map(lambda _: run_one(point["runs"]["timed"], bundle, timeout),
                                 range(count)))  # fmt: skip
        return {"processes": outs}
    timed = run_one(point["runs"]["timed"], bundle, timeout)
    if timed["status"] != "ok":
        return {"timed": timed}
    return {"timed": timed, "locks": run_one(point["runs"]["locks"], bundle, timeout)}


def play(opts: argparse.Namespace) -> int:
    bundle = Path(opts.bundle).resolve()
    plan = json.loads((bundle / "plan.json").read_text())
    facts = machine()
    started = time.monotonic()
    with open(opts.out, "a", encoding="utf-8") as results:
        results.write(json.dumps({"machine": facts, "commit": plan["commit"]}) + "\n")
        for repetition in range(1, plan["repetitions"] + 1):
            order = list(range(len(plan["points"])))
            random.Random(repetition).shuffle(order)
            for index in order:
                point = plan["points"][index]
                if point["threads"] > facts["cpus"]:
                    continue
                if time.monotonic() - started > opts.deadline:
                    print(f"deadline reached in repetition {repetition}", file=sys.stderr)
                    return 0
                record = {"point": index, "repetition": repetition,
                          **play_point(point, bundle, opts.timeout)}  # fmt: skip
                results.write(json.dumps(record) + "\n")
                results.flush()
            print(f"repetition {repetition} done at {time.monotonic() - started:.0f} s",
                  file=sys.stderr)  # fmt: skip
    return 0


# -- table ----------------------------------------------------------------------------------


def negotiated_as_asked(output: dict[str, Any]) -> str | None:
    """Why a run's negotiated parameters differ from its own request, or None (a resumed
    handshake signs nothing: no signature scheme to compare)."""
    asked, got = output.get("params", {}), output.get("negotiated") or {}
    resumed = output.get("scenario") == "resume"
    for key in ("version", "suite", "group") + (() if resumed else ("sigalg",)):
        want = asked.get("tls" if key == "version" else key)
        if want and got.get(key) != want:
            return f"{key}: asked {want}, negotiated {got.get(key)}"
    if resumed and not got.get("resumed"):
        return "the resumption did not resume"
    return None


def same_point(output: dict[str, Any], point: dict[str, Any]) -> str | None:
    """Why a run's own parameters are not its plan point's (a results file read against
    another plan), or None."""
    params, options = output.get("params", {}), point["options"]
    threads = 1 if point["model"] == "processes" else point["threads"]
    if params.get("threads") != threads or params.get("cert") != options.get("cert", "rsa2048"):
        return f"ran threads={params.get('threads')} cert={params.get('cert')}"
    if output.get("variant") != point["variant"]:
        return f"ran {output.get('variant')}"
    return None


def total_rate(record: dict[str, Any], point: dict[str, Any]) -> float | None:
    """The point's total handshakes/s, or None if a run failed; a run that negotiated
    something else than asked, or that is not the plan's point, stops the table."""
    runs = record.get("processes") or [record.get("timed")]
    rates = []
    for run in runs:
        if not run or run.get("status") != "ok":
            return None
        why = negotiated_as_asked(run["output"]) or same_point(run["output"], point)
        if why:
            raise SystemExit(f"point {record['point']}: {why}: an error, never a sample")
        rates.append(run["output"]["summary"]["total_handshakes_per_s"]["median"])
    return sum(rates)


def acquisitions(record: dict[str, Any], side: str) -> float | None:
    locks = (record.get("locks") or {}).get("output", {}) or {}
    counts = locks.get("locks")
    if not counts:
        return None
    return sum(counts[side][k]["calls"] for k in ACQUIRING) / counts["iterations"]


def contended(record: dict[str, Any]) -> float | None:
    """Lock calls of every kind, both sides, that found the lock held, per handshake."""
    counts = ((record.get("locks") or {}).get("output", {}) or {}).get("locks")
    if not counts:
        return None
    total = sum(v["contended"] for side in ("client", "server") for v in counts[side].values())
    return total / counts["iterations"]


def read_text(path: Path) -> str:
    """A file of a run folder, as played or as committed (xz-compressed)."""
    packed = path.with_name(path.name + ".xz")
    return lzma.decompress(packed.read_bytes()).decode() if packed.exists() else path.read_text()


def table(opts: argparse.Namespace) -> int:
    rates: dict[tuple[str, str, str, int], list[float]] = {}
    locks: dict[tuple[str, str, str, int], list[tuple[float | None, float | None]]] = {}
    contention: dict[tuple[str, str, str, int], list[float]] = {}
    builds: dict[str, Any] = {}
    for folder in map(Path, opts.runs):
        plan = json.loads(read_text(folder / "plan.json"))
        lines = [json.loads(line) for line in read_text(folder / "results.jsonl").splitlines()]
        facts = next(line for line in lines if "machine" in line)
        records = [line for line in lines if "point" in line]
        failed = 0
        for record in records:
            point = plan["points"][record["point"]]
            case = f"{point['scenario'].removeprefix('scaling-')} {point['options'].get('cert')}"
            key = (point["variant"], case, point["model"], point["threads"])
            rate = total_rate(record, point)
            if rate is None:
                failed += 1
                continue
            rates.setdefault(key, []).append(rate)
            locks.setdefault(key, []).append(
                (acquisitions(record, "client"), acquisitions(record, "server"))
            )
            held = contended(record)
            if held is not None:
                contention.setdefault(key, []).append(held)
        builds.update(plan["builds"])
        print(f"{folder.name}: {facts['machine']}; tlsbench {facts['commit']}; "
              f"{len(records)} point runs, {failed} failed")  # fmt: skip
    print(
        "\n| variant | job | model | T | handshakes/s | efficiency | threads / processes "
        "| lock acq. per handshake, client / server | contended per handshake | repetitions |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(rates, key=lambda k: (k[0], k[1], MODELS.index(k[2]), k[3])):
        variant, case, model, threads = key
        median = statistics.median(rates[key])
        one = rates.get((variant, case, model, 1))
        efficiency = median / (threads * statistics.median(one)) if one else None
        base = rates.get((variant, case, "processes", threads))
        versus = median / statistics.median(base) if base and model != "processes" else None
        clients = [c for c, s in locks[key] if c is not None and s is not None]
        servers = [s for c, s in locks[key] if c is not None and s is not None]
        acq_text = (f"{statistics.median(clients):,.0f} / "
                    f"{statistics.median(servers):,.0f}") if clients else ""  # fmt: skip
        print(
            f"| {variant} | {case} | {model} | {threads} | {median:,.0f} | "
            f"{'' if efficiency is None else f'{efficiency:.2f}'} | "
            f"{'' if versus is None else f'{versus:.2f}'} | {acq_text} | "
            f"{f'{statistics.median(contention[key]):.3f}' if key in contention else ''} | "
            f"{len(rates[key])} |"
        )
    print(
        "\nSpeed-up at the most threads measured (T = 16 on a 16-CPU machine): the total "
        "rate over the same model's T = 1 rate; handshakes/s at T = 1 from the processes model.\n"
    )
    print("| variant | job | T = 1, handshakes/s | T | shared | per-thread | processes |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for variant, case in dict.fromkeys((k[0], k[1]) for k in sorted(rates)):
        top = max(k[3] for k in rates if k[:2] == (variant, case))
        cells = []
        for model in MODELS:
            one, most = rates.get((variant, case, model, 1)), rates.get((variant, case, model, top))
            cells.append(f"x{statistics.median(most) / statistics.median(one):.1f}"
                         if one and most else "")  # fmt: skip
        single = rates.get((variant, case, "processes", 1))
        print(
            f"| {variant} | {case} | {statistics.median(single) if single else 0:,.0f} | {top} | "
            + " | ".join(cells)
            + " |"
        )
    print("\nbuilds: " + "; ".join(f"{v} {b['version']} key {b['key'][:16]} driver sha256 "
                                   f"{b['driver_sha256'][:16]}"
                                   for v, b in builds.items()))  # fmt: skip
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("pack")
    p.add_argument("--out", required=True)
    p.add_argument("--variants", default="")
    p.add_argument("--certs", default="rsa2048,ecdsa-p256")
    p.add_argument("--scenarios", default="scaling-handshake,scaling-resume")
    p.add_argument("--repetitions", type=int, default=3)
    p = verbs.add_parser("play")
    p.add_argument("bundle")
    p.add_argument("--out", required=True)
    p.add_argument("--deadline", type=float, default=420.0)
    p.add_argument("--timeout", type=float, default=60.0)
    p = verbs.add_parser("table")
    p.add_argument("runs", nargs="+", help="folders of plan.json and results.jsonl (or .xz)")
    opts = parser.parse_args()
    return {"pack": pack, "play": play, "table": table}[opts.verb](opts)


if __name__ == "__main__":
    sys.exit(main())
