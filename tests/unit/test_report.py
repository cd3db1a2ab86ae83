"""`tlsbench report`: every format from one synthetic but realistic results store.

The store is built here, point by point, with outputs shaped like the driver's JSON (see
`./tlsbench drive null handshake --json`) and fixed pseudo-random samples, so that the
markdown report can be compared with tests/golden/report.md byte for byte. After a
deliberate change of the report, regenerate the golden file with UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.report import FORMATS, export, load_run, write_report
from tlsbench.report.csv import TIDY_COLUMNS
from tlsbench.reportkit.contents import plots, views, write_plots
from tlsbench.reportkit.model import RunModel
from tlsbench.reportkit.views import fmt_bytes, fmt_sig
from tlsbench.scenarios import sections

GOLDEN = Path(__file__).parents[1] / "golden" / "report.md"
TSC_HZ = 2596120088.0
REPETITIONS = 3
STARTED = "2025-11-22T06:50:00+00:00"
# the overview, heap vs record size, handshake time, latency CDF, AEAD, throughput, capacity
EXPECTED_PLOTS = 7

ENVIRONMENT: dict[str, Any] = {
    "cpu": {
        "model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
        "cores": 2,
        "crypto_flags": {"aes": True, "pclmulqdq": True, "avx2": True, "sha_ni": True,
                         "vaes": False, "vpclmulqdq": False},
        "invariant_tsc": True,
        "governor": None,
        "turbo": None,
        "virtualization": "kvm",
    },
    "kernel": "6.1.0-28-amd64",
    "compiler": "gcc (Debian 12.2.0-14) 12.2.0",
    "python": "3.11.7",
    "commit": "b191411",
    "warnings": [
        "virtual machine (kvm): steal time and shared caches add noise",
        "frequency governor and turbo are not readable here",
    ],
}  # fmt: skip

NULL_BUILD = {"name": "null", "library": "null", "version": "1", "line": "null", "options": {},
              "cache_key": "56e414ee3f807d02", "probe": {"library": "null"}}  # fmt: skip


def mbedtls_build(name: str, content_len: int, key: str) -> dict[str, Any]:
    return {
        "name": name, "library": "mbedtls", "version": "3.6.6", "line": "mbedtls-3.6.6",
        "features": ["records-4096"] if content_len == 4096 else [],
        "options": {"MBEDTLS_SSL_IN_CONTENT_LEN": str(content_len),
                    "MBEDTLS_SSL_OUT_CONTENT_LEN": str(content_len)},
        "cache_key": key,
        "compile_flags": {"compiles": 117, "flags": {"-O2": 117, "-std=c99": 114}},
        "probe": {"library": "mbedtls", "version": "Mbed TLS 3.6.6",
                  "max_in_record_payload": content_len, "max_out_record_payload": content_len,
                  "MBEDTLS_SSL_IN_CONTENT_LEN": content_len,
                  "MBEDTLS_SSL_OUT_CONTENT_LEN": content_len, "MBEDTLS_AESNI_C": True},
    }  # fmt: skip


WOLFSSL_BUILD = {"name": "wolfssl-5.7.2", "library": "wolfssl", "version": "5.7.2",
                 "line": "wolfssl-5.7.2", "options": {}, "cache_key": "3e2e05a88671c85d",
                 "probe": {"library": "wolfssl", "version": "5.7.2", "aesni": False}}  # fmt: skip
MBED_4K = "mbedtls-3.6.6:records-4096"
MBED_16K = "mbedtls-3.6.6"
WOLF = "wolfssl-5.7.2"
BUILDS = {
    "null": NULL_BUILD,
    MBED_4K: mbedtls_build(MBED_4K, 4096, "98462e84d16a46bc"),
    MBED_16K: mbedtls_build(MBED_16K, 16384, "54c2d0120c01384d"),
    WOLF: WOLFSSL_BUILD,
}
SUITE13 = "TLS_AES_128_GCM_SHA256"
SUITE12 = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"

# Heap per variant and record size: (ctx, peak, retained) per side, bytes.
HEAP = {
    ("null", 0): {"client": (88, 16536, 16536), "server": (88, 16536, 16536)},
    (MBED_4K, 0): {"client": (3180, 27422, 12618), "server": (5012, 31877, 13342)},
    (MBED_16K, 0): {"client": (3180, 52022, 37218), "server": (5012, 56477, 37942)},
    (WOLF, 4096): {"client": (4211, 30864, 14720), "server": (6902, 36510, 15844)},
    (WOLF, 16384): {"client": (4211, 55440, 39296), "server": (6902, 61086, 40420)},
}
# Median CPU ns per handshake: (client, server).
HANDSHAKE_NS = {
    ("null", "1.3"): (1530, 1090),
    (MBED_4K, "1.3"): (1_104_000, 2_391_000),
    (MBED_4K, "1.2"): (912_000, 2_204_000),
    (MBED_16K, "1.3"): (1_109_000, 2_398_000),
    (WOLF, "1.3"): (642_000, 1_512_000),
}
RECORD_NS = {"null": (40.0, 40.0), MBED_4K: (912.0, 884.0), WOLF: (706.0, 731.0)}
READ_ALLOCS = {"null": 0, MBED_4K: 0, WOLF: 1}
BULK_MBPS = {"null": (83348.0, 41683.0), MBED_4K: (1843.0, 1921.0), WOLF: (1187.0, 1264.0)}
AEAD_CPB = {  # TSC cycles per byte at payloads 16, 256, 1350, 16384
    MBED_4K: {"AES-128-GCM": (41.2, 4.61, 1.62, 0.91), "AES-256-GCM": (47.9, 5.32, 1.97, 1.18),
              "ChaCha20-Poly1305": (52.4, 6.08, 3.21, 2.43)},
    WOLF: {"AES-128-GCM": (118.0, 13.9, 6.12, 4.87), "AES-256-GCM": (131.0, 16.4, 7.63, 6.22),
           "ChaCha20-Poly1305": (47.5, 5.51, 2.95, 2.21)},
}  # fmt: skip


def jitter(rng: random.Random, base: float, spread: float, index: int) -> float:
    """A sample near `base`; every 23rd is a slow outlier, as on a real machine."""
    value = base * (1 + spread * (rng.random() - 0.5))
    return value * 1.35 if index % 23 == 22 else value


def driver_output(variant: str, scenario: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": 1, "variant": variant, "library": BUILDS[variant]["library"],
        "scenario": scenario,
        "params": {"tls": "1.3", "suite": SUITE13, "group": "x25519",
                   "sigalg": "rsa_pss_rsae_sha256", "cert": "rsa2048", "chain": 1,
                   "auth": "server", "wrong_ca": False, "record_size": 0, "payload": 0,
                   "aead": None, "iterations": 20, "warmup": 5, **params},
        "version": BUILDS[variant]["probe"].get("version", "null 1 (no TLS)"),
        "tsc_hz": TSC_HZ,
        "warnings": ["null adapter: no TLS, the harness baseline"] if variant == "null" else [],
        "exit": 0,
    }  # fmt: skip


def with_samples(output: dict[str, Any], samples: dict[str, list[float]]) -> dict[str, Any]:
    units = {"ns": "ns", "allocs": "allocations", "MBps": "MB/s", "per_s": "1/s",
             "_us": "us", "tps": "transactions/s", "hps": "handshakes/s", "per_tx": "ms",
             "utilization": "fraction of a core"}  # fmt: skip
    output["samples"] = samples
    output["summary"] = {
        name: {"unit": next(u for k, u in units.items() if name.endswith(k)), "n": len(v),
               "min": min(v), "median": statistics.median(v), "max": max(v)}
        for name, v in samples.items()
    }  # fmt: skip
    return output


def heap_of(variant: str, record_size: int, repetition: int) -> dict[str, Any]:
    heap: dict[str, Any] = {"global": {"live": 0, "peak": 0, "allocs": 0}}
    for side, (ctx, peak, retained) in HEAP[(variant, record_size)].items():
        peak += 16 * (repetition == 1)  # one repetition differs: reports show the median
        heap[side] = {
            "start": 0, "ctx": ctx, "peak": peak, "retained": retained,
            "peak_minus_start": peak, "retained_minus_start": retained,
            "conn_peak": peak - ctx, "conn_retained": retained - ctx,
            "handshake_allocs": 1 if variant == "null" else 87,
        }  # fmt: skip
    return heap


class Fixture:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.run_id = store.new_run(
            "report-fixture",
            "How do mbedTLS and wolfSSL compare on heap, handshake time, records, bulk and AEAD?",
            "measure",
            REPETITIONS,
            ENVIRONMENT,
            "# synthetic experiment of tests/unit/test_report.py\n",
            "b191411",
        )
        self.points: list[dict[str, Any]] = []
        self.outputs: dict[tuple[str, str], list[Any]] = {}

    def point(self, variant: str, name: str, scenario: str, params: dict[str, Any],
              results: list[Any]) -> None:  # fmt: skip
        self.points.append({"name": name, "variant": variant, "library": BUILDS[variant]["library"],
                            "scenario": scenario, "params": {"scenario": scenario, **params},
                            "build": BUILDS[variant]})  # fmt: skip
        self.outputs[(variant, name)] = results

    def save(self) -> int:
        self.store.add_points(self.run_id, self.points)
        for point in self.store.points(self.run_id):
            for repetition, result in enumerate(self.outputs[(point.variant, point.name)]):
                status, exit_code, signal, output, stderr = result
                self.store.add_result(
                    point.id, repetition, status, exit_code, signal, 1.5 + repetition / 10,
                    STARTED, output, stderr,
                )  # fmt: skip
        self.store.finish_run(self.run_id, "done")
        # Wall-clock stamps would change the golden report on every run: fix them.
        with self.store.transaction() as db:
            db.execute(
                "UPDATE runs SET started_at = ?, finished_at = ? WHERE id = ?",
                (STARTED, "2025-11-22T07:12:31+00:00", self.run_id),
            )
        return self.run_id


def ok(output: dict[str, Any]) -> tuple[str, int, None, dict[str, Any], str]:
    return ("ok", 0, None, output, "")


def build_store(path: Path) -> tuple[Store, int]:
    """A run with null + mbedTLS (two record-buffer builds) + wolfSSL, every scenario, one
    unsupported and one failed point."""
    store = Store(path)
    fx = Fixture(store)
    rng = random.Random(20251122)

    def handshake(variant: str, tls: str, record_size: int = 0) -> None:
        params: dict[str, Any] = {"tls": tls, "iterations": 20}
        if tls == "1.2":
            params |= {"suite": SUITE12, "sigalg": "rsa_pkcs1_sha256"}
        if record_size:
            params["record_size"] = record_size
        client_ns, server_ns = HANDSHAKE_NS[(variant, tls)]
        results = []
        for rep in range(REPETITIONS):
            client = [round(jitter(rng, client_ns, 0.06, i)) for i in range(20)]
            server = [round(jitter(rng, server_ns, 0.06, i)) for i in range(20)]
            out = driver_output(variant, "handshake", params)
            out["negotiated"] = {"version": tls, "suite": params.get("suite", SUITE13),
                                 "group": "x25519", "resumed": False}  # fmt: skip
            out["heap"] = heap_of(variant, record_size, rep)
            # What the core counted at the transport: TLS 1.2 waits for two server flights.
            hello = 180 if variant != "null" else 11
            out["wire"] = {
                "full": {
                    "client": {"bytes_sent": hello + 64, "records_sent": 3, "flights_sent": 2},
                    "server": {"bytes_sent": 1450, "records_sent": 6, "flights_sent": 1},
                    "client_hello_bytes": hello,
                    "round_trips": 2 if tls == "1.2" else 1,
                }
            }
            results.append(ok(with_samples(out, {
                "client_cpu_ns": client, "server_cpu_ns": server,
                "wall_ns": [round(1.08 * (c + s)) for c, s in zip(client, server, strict=True)],
                "handshakes_per_s": [1e9 / (c + s) for c, s in zip(client, server, strict=True)],
            })))  # fmt: skip
        name = "handshake_" + tls + (f"_rs{record_size}" if record_size else "")
        if tls == "1.2":
            name += "_ecdhe_rsa_aes_128_gcm_sha256"
        fx.point(variant, name, "handshake", params, results)

    handshake("null", "1.3")
    handshake(MBED_4K, "1.3")
    handshake(MBED_4K, "1.2")
    handshake(MBED_16K, "1.3")
    handshake(WOLF, "1.3", 4096)
    handshake(WOLF, "1.3", 16384)

    tick = 1e9 / TSC_HZ  # latencies come from the TSC: whole ticks converted to ns
    for variant, (write_ns, read_ns) in RECORD_NS.items():
        results = []
        for _ in range(REPETITIONS):
            out = driver_output(variant, "records", {"payload": 256, "iterations": 100})
            results.append(ok(with_samples(out, {
                "write_ns": [round(jitter(rng, write_ns, 0.3, i) / tick) * tick
                             for i in range(100)],
                "read_ns": [round(jitter(rng, read_ns, 0.3, i) / tick) * tick
                            for i in range(100)],
                "write_allocs": [0.0] * 100,
                "read_allocs": [float(READ_ALLOCS[variant])] * 100,
            })))  # fmt: skip
        fx.point(variant, "records_256B", "records", {"payload": 256, "iterations": 100}, results)

    for variant, (sender, receiver) in BULK_MBPS.items():
        params = {"payload": 16384, "bytes": 100_000_000, "iterations": 3}
        results = []
        for _ in range(REPETITIONS):
            out = driver_output(variant, "bulk", params)
            results.append(ok(with_samples(out, {
                "sender_MBps": [jitter(rng, sender, 0.04, i) for i in range(3)],
                "receiver_MBps": [jitter(rng, receiver, 0.04, i) for i in range(3)],
            })))  # fmt: skip
        fx.point(variant, "bulk_100000000bytes", "bulk", {"bytes": 100_000_000}, results)

    for variant, table in AEAD_CPB.items():
        results = []
        for _ in range(REPETITIONS):
            items = []
            for aead, per_payload in table.items():
                for payload, cpb in zip((16, 256, 1350, 16384), per_payload, strict=True):
                    cpb = jitter(rng, cpb, 0.02, 0)
                    ns_per_byte = cpb * 1e9 / TSC_HZ
                    items.append({"aead": aead, "payload": payload, "ad": 12, "runs": 3000,
                                  "median_tsc_cycles": cpb * payload, "tsc_cycles_per_byte": cpb,
                                  "ns_per_byte": ns_per_byte, "MBps": 1e3 / ns_per_byte,
                                  "min_tsc_cycles": 0.97 * cpb * payload,
                                  "p99_tsc_cycles": 1.4 * cpb * payload})  # fmt: skip
            out = driver_output(variant, "aead", {"iterations": 3000, "warmup": 300})
            out["aead"] = items
            results.append(ok(with_samples(out, {})))
        fx.point(variant, "aead", "aead", {"iterations": 3000}, results)

    # The null adapter has no AEAD: unsupported (exit 3) in every repetition.
    unsupported = driver_output("null", "aead", {"iterations": 3000})
    unsupported |= {"error": {"stage": "AES-128-GCM", "message": "the null adapter has no AEAD"},
                    "exit": 3}  # fmt: skip
    stderr = "tlsbench-driver: AES-128-GCM failed (exit 3): the null adapter has no AEAD\n"
    fx.point("null", "aead", "aead", {"iterations": 3000},
             [("unsupported", 3, None, dict(unsupported), stderr)] * REPETITIONS)  # fmt: skip

    # A library call failed (exit 5) twice, and the third process died on a signal.
    failed = driver_output(WOLF, "handshake", {"group": "ffdhe3072", "tls": "1.2"})
    failed |= {"error": {"stage": "handshake",
                         "message": "server: wolfSSL_accept: -313 (received alert fatal error)"},
               "exit": 5}  # fmt: skip
    tail = ("tlsbench-driver: loading certs/rsa2048\n"
            "tlsbench-driver: handshake failed (exit 5): server: wolfSSL_accept: -313 "
            "(received alert fatal error)\n")  # fmt: skip
    fx.point(WOLF, "handshake_1.2_ffdhe3072", "handshake", {"tls": "1.2", "group": "ffdhe3072"},
             [("failed", 5, None, dict(failed), tail), ("failed", 5, None, dict(failed), tail),
              ("failed", None, 11, None, "Segmentation fault\n")])  # fmt: skip

    # mbedTLS's server under load: tlsbench's generator at 1 and 4 connections, h2load at 4.
    for client, connections, tps, p50, p99 in ((MBED_4K, 1, 9100.0, 105.0, 180.0),
                                               (MBED_4K, 4, 21000.0, 170.0, 420.0),
                                               ("h2load", 4, 15500.0, 240.0, 610.0)):  # fmt: skip
        params = {"client": client, "pattern": "keepalive", "connections": connections,
                  "duration_s": 3}  # fmt: skip
        results = []
        for rep in range(REPETITIONS):
            out = driver_output(MBED_4K, "load", {})
            out["load"] = {"saturated": client == "h2load", "latency_from": "request"}
            results.append(ok(with_samples(out, {
                "load_tps": [tps * (1 + rep / 100)], "load_hps": [connections / 3],
                "load_MBps": [tps * 1024 / 1e6], "latency_p50_us": [p50],
                "latency_p99_us": [p99 + rep], "server_cpu_ms_per_tx": [1000 / tps / 1.1],
                "generator_cpu_utilization": [0.95 if client == "h2load" else 0.6],
            })))  # fmt: skip
        name = f"load_on-self_by-{client}_keepalive_c{connections}"
        fx.point(MBED_4K, name, "load", params, results)
    return store, fx.save()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> RunModel:
    store, run_id = build_store(tmp_path_factory.mktemp("store") / "results.sqlite")
    try:
        assert store.check_consistent() == []
        return load_run(store, run_id)
    finally:
        store.close()


# -- the model --------------------------------------------------------------------------------


def test_model_figures_follow_the_methodology(tmp_path: Path) -> None:
    store, run_id = build_store(tmp_path / "results.sqlite")
    m = load_run(store, "latest")
    assert m.run.id == run_id and m.run.status == "done"

    # Handshake time: client + server CPU ns per handshake, the median of each repetition's
    # median (the process is the statistical unit), not the median of pooled samples.
    point = next(p for p in store.points(run_id) if p.variant == WOLF and "rs4096" in p.name)
    client = store.samples_by_repetition(point.id, "client_cpu_ns")
    server = store.samples_by_repetition(point.id, "server_cpu_ns")
    total = statistics.median(
        statistics.median(c + s for c, s in zip(cr, sr, strict=True))
        for cr, sr in zip(client, server, strict=True)
    )
    pooled = statistics.median(
        c + s for cr, sr in zip(client, server, strict=True) for c, s in zip(cr, sr, strict=True)
    )
    assert pooled != total  # the fixture tells the two apart
    row = next(r for r in m.handshakes if r.point == point.name)
    assert row.ms == pytest.approx(total / 1e6)
    assert row.handshakes_per_s == pytest.approx(1e9 / total)
    assert row.ms_ci_low <= row.ms <= row.ms_ci_high
    assert row.n == 20 * REPETITIONS

    # Heap: the median over repetitions (one repetition reports 16 bytes more).
    mem = next(r for r in m.memory if r.point == point.name and r.side == "server")
    assert (mem.peak, mem.retained, mem.conn_peak) == (36510, 15844, 36510 - 6902)
    assert mem.record_size == 4096  # the point's record_size option
    # mbedTLS: the record buffer is a build option, read back from the build's probe.
    sizes = {r.variant: r.record_size for r in m.memory if r.library == "mbedtls"}
    assert sizes == {MBED_4K: 4096, MBED_16K: 16384}
    assert {r.record_size for r in m.memory if r.variant == "null"} == {None}

    # Failed and unsupported points are reported, not measured.
    problems = {(p.variant, p.point): p for p in m.problems}
    assert set(problems) == {("null", "aead"), (WOLF, "handshake_1.2_ffdhe3072")}
    assert problems[("null", "aead")].status == "unsupported"
    failed = problems[(WOLF, "handshake_1.2_ffdhe3072")]
    assert (failed.status, failed.exit_code, failed.bad_repetitions) == ("failed", 5, 3)
    assert "wolfSSL_accept: -313" in failed.message and "-313" in failed.stderr_tail
    assert not any(r.point == "handshake_1.2_ffdhe3072" for r in m.handshakes)

    assert m.throughput[0].variant == "null" and m.throughput[0].baseline
    assert len(m.aead) == 2 * 3 * 4
    assert {(r.op, r.allocs_per_record) for r in m.latency if r.variant == WOLF} == {
        ("write", 0.0),
        ("read", 1.0),
    }
    assert any(n.kind == "environment" for n in m.notes)
    env = {e.key: e.value for e in m.environment}
    assert env["cpu.model"].startswith("Intel") and env["commit"] == "b191411"
    assert env["cpu.crypto_flags"].startswith("aes, pclmulqdq")
    store.close()


def test_a_run_without_points_reports_and_skips_every_plot(tmp_path: Path) -> None:
    store = Store(tmp_path / "empty.sqlite")
    store.new_run("empty", "", "measure", 1, {}, "", "unknown")
    m = load_run(store)
    assert plots(m) == []
    assert write_plots(m, tmp_path / "plots") == []
    assert "# tlsbench report: run 1" in export(m, "markdown")
    assert '<figure class="plot"' not in export(m, "html")
    for fmt in ("csv", "json"):
        assert export(m, fmt)
    store.close()


def test_plots_skip_themselves_without_data(tmp_path: Path) -> None:
    """Only the null variant: no record size for a heap line, no library to compare
    handshakes of, no AEAD or bulk point; the latency CDF alone has data."""
    store = Store(tmp_path / "null.sqlite")
    fx = Fixture(store)
    out = with_samples(driver_output("null", "handshake", {}), {
        "client_cpu_ns": [1530.0] * 5, "server_cpu_ns": [1090.0] * 5})  # fmt: skip
    out["heap"] = heap_of("null", 0, 0)
    fx.point("null", "handshake", "handshake", {}, [ok(out)])
    records = with_samples(driver_output("null", "records", {"payload": 256}), {
        "write_ns": [40.0, 41.0, 39.0], "read_ns": [42.0, 40.0, 41.0]})  # fmt: skip
    fx.point("null", "records_256B", "records", {"payload": 256}, [ok(records)])
    m = load_run(store, fx.save())
    # No overview either: the harness baseline alone is left to the summary table.
    assert [p.name for p in plots(m)] == ["record_latency_cdf"]
    assert export(m, "html").count('<figure class="plot"') == 1
    store.close()


def test_number_formats() -> None:
    assert fmt_bytes(52022) == "52,022"
    assert [fmt_sig(v) for v in (0.012345, 1.2345, 40.06, 123.4, 381242.9, 9.996, 0)] == [
        "0.0123", "1.23", "40.1", "123", "381,243", "10.0", "0"
    ]  # fmt: skip


# -- exporters --------------------------------------------------------------------------------


def test_markdown_matches_golden(model: RunModel) -> None:
    text = export(model, "markdown")
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text)
    assert GOLDEN.exists(), "no golden report yet: run with UPDATE_GOLDEN=1"
    assert text == GOLDEN.read_text(), "report changed; if on purpose: UPDATE_GOLDEN=1 pytest"


def test_markdown_tables_are_well_formed(model: RunModel) -> None:
    text = export(model, "markdown")
    for view in views(model):
        header = "| " + " | ".join(view.headers) + " |"
        assert header in text, view.name
    for line in text.splitlines():
        if line.startswith("|"):
            assert line.endswith("|")
    tables = [b for b in text.split("\n\n") if b.startswith("|")]
    for block in tables:
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in block.splitlines()}
        assert len(widths) == 1, block


def test_tidy_csv_is_one_figure_per_row(model: RunModel) -> None:
    """What pandas, R or DuckDB load without knowing tlsbench: every row one figure, named
    by its columns, its value a number."""
    rows = list(csv.DictReader(io.StringIO(export(model, "csv"))))
    assert rows and list(rows[0]) == list(TIDY_COLUMNS)
    keys = [(r["variant"], r["point"], r["side"], r["detail"], r["metric"], r["statistic"])
            for r in rows]  # fmt: skip
    assert len(keys) == len(set(keys)), "a figure appears twice"
    for row in rows:
        float(row["value"])
        assert row["run"] == str(model.run.id) and row["unit"]
    handshake = model.handshakes[0]
    [median] = [r for r in rows if (r["variant"], r["point"], r["metric"], r["statistic"]) ==
                (handshake.variant, handshake.point, "latency", "median")]  # fmt: skip
    assert float(median["value"]) == handshake.ms * 1e6  # exact: floats round-trip
    memory = model.memory[0]
    [peak] = [r for r in rows if (r["variant"], r["point"], r["side"], r["metric"]) ==
              (memory.variant, memory.point, memory.side, "heap-peak")]  # fmt: skip
    assert float(peak["value"]) == memory.peak_minus_start and peak["unit"] == "bytes"
    assert {r["statistic"] for r in rows} >= {"value", "median", "ci95_low", "ci95_high"}


def test_tidy_csv_loads_in_pandas_as_figures(model: RunModel, tmp_path: Path) -> None:
    import pandas  # a dev dependency: the tool a user loads the figures with

    (tmp_path / "run.csv").write_text(export(model, "csv"))
    frame = pandas.read_csv(tmp_path / "run.csv", keep_default_na=False)
    assert frame["value"].dtype.kind == "f" or frame["value"].dtype.kind == "i"
    handshake = model.handshakes[0]
    picked = frame[(frame.variant == handshake.variant) & (frame.metric == "latency")
                   & (frame.statistic == "median") & (frame.point == handshake.point)]  # fmt: skip
    assert picked["value"].tolist() == [handshake.ms * 1e6]


def test_wide_csv_parses_back(model: RunModel) -> None:
    rows = list(csv.DictReader(io.StringIO(export(model, "csv-wide"))))
    by_table: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_table.setdefault(row["table"], []).append(row)
    for table in model.tables():
        assert len(by_table.get(table.name, [])) == len(table.rows), table.name
    first = by_table["handshake_time"][0]
    assert float(first["ms"]) == model.handshakes[0].ms  # exact: floats round-trip
    assert first["variant"] == model.handshakes[0].variant
    baseline = [r["baseline"] for r in by_table["bulk_throughput"]]
    assert baseline == ["true", "false", "false"]
    assert by_table["problems"][1]["exit_code"] == "5"


def test_json_parses_back(model: RunModel) -> None:
    document = json.loads(export(model, "json"))
    assert document["format"] == "tlsbench-report"
    assert document["run"] == asdict(model.run)
    for table in model.tables():
        if table.name != "run":
            assert document["tables"][table.name] == [asdict(r) for r in table.rows]


def test_unknown_format_is_a_user_error(model: RunModel) -> None:
    with pytest.raises(UserError, match="markdown, csv, json, html"):
        export(model, "pdf")


def test_write_report_writes_every_format_and_plot(model: RunModel, tmp_path: Path) -> None:
    written = write_report(model, tmp_path / "out")
    names = sorted(p.relative_to(tmp_path / "out").as_posix() for p in written)
    assert [n for n in names if n.startswith("report")] == sorted(
        f"report.{s}" for s in ("md", "csv", "json", "html")
    )
    assert len(FORMATS) == 4
    pngs = [p for p in written if p.suffix == ".png"]
    svgs = [p for p in written if p.suffix == ".svg"]
    assert len(pngs) == len(svgs) == EXPECTED_PLOTS
    for png in pngs:
        assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and png.stat().st_size > 5000
    for svg in svgs:
        assert ET.parse(svg).getroot().tag.endswith("svg")


def test_plots_are_reproducible(model: RunModel) -> None:
    assert export(model, "html") == export(model, "html")


# -- HTML -------------------------------------------------------------------------------------


def test_html_is_self_contained_with_every_table_and_plot(model: RunModel) -> None:
    page = export(model, "html")
    for view in views(model):
        assert f'data-table="{view.name}"' in page, view.name
    assert page.count('<figure class="plot"') == EXPECTED_PLOTS
    assert page.count("<svg") == EXPECTED_PLOTS
    # Nothing to fetch: no links, no external sources, no DOCTYPE of the SVG files.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page and "<!DOCTYPE svg" not in page
    assert "Content-Security-Policy" in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "plots share element ids"
    assert "Intel(R) Xeon(R) Platinum 8375C" in page  # the environment
    assert "wolfSSL_accept: -313" in page  # a failed point's message and stderr


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def chromium(page: Path, tmp_path: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", *mode,
         page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip


@pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="chromium missing: apt-get install chromium"
)
def test_html_renders_in_headless_chromium(model: RunModel, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    export(model, "html", page)

    dumped = chromium(page, tmp_path, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    title = re.search(r"<title>(.*?)</title>", dumped.stdout, re.DOTALL)
    assert title is not None, dumped.stdout[:2000]
    assert title.group(1).endswith(f"[plots ok: {EXPECTED_PLOTS}]"), title.group(1)
    console_errors = [
        line for line in dumped.stderr.splitlines()
        if ("CONSOLE" in line and "Uncaught" in line) or "ERROR:CONSOLE" in line
        or ("CONSOLE" in line and "Content Security Policy" in line)
    ]  # fmt: skip
    assert console_errors == [], "\n".join(console_errors)

    shot = tmp_path / "report.png"
    taken = chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,2400")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] >= 2000 and pixels.shape[1] >= 1200
    # Not blank: many distinct shades (text, table rules, plot colours), not one colour.
    rgb = (pixels[..., :3] * 255).astype("uint8").reshape(-1, 3)
    distinct = {tuple(p) for p in rgb[:: max(len(rgb) // 200_000, 1)]}
    assert len(distinct) > 50, f"screenshot looks blank ({len(distinct)} colours)"
    assert (rgb.min(axis=1) < 128).mean() > 0.005  # some dark pixels: ink on the page


def test_network_latency_plot_has_a_panel_per_loss_and_a_line_per_case() -> None:
    """Handshake time against RTT: interop rows over the emulated network, per loss."""
    from tlsbench.reportkit.model import RunInfo, RunModel
    from tlsbench.scenarios.interop import InteropRow, network_latency

    def row(group: str, rtt: float, loss: float) -> InteropRow:
        return InteropRow(
            variant="openssl-3.5.x", point=f"{group}-{rtt}-{loss}", client="openssl-3.5.x",
            server="openssl-3.5.x", case=f"{group} RTT {rtt} ms", result="ok", negotiated="",
            detail="", client_wall_ms=3 * rtt + loss, client_cpu_ms=1.0, server_cpu_ms=1.0,
            client_heap_peak=None, server_heap_peak=None, client_bytes=None, server_bytes=None,
            round_trips=2.0, rtt_ms=rtt, loss=loss, client_wall_p90_ms=4 * rtt + loss,
            line=group,
        )  # fmt: skip

    run = RunInfo(1, "network", "?", "time", 1, "complete", STARTED, None, "abc")
    rows = [row(g, rtt, loss) for g in ("x25519", "X25519MLKEM768") for rtt in (5.0, 80.0)
            for loss in (0.0, 3.0)]  # fmt: skip
    plot = network_latency(RunModel(run=run, figures={"interop": rows}, sections=sections()))
    assert plot is not None
    axes = plot.figure.axes
    assert [ax.get_title() for ax in axes] == ["loss 0 %", "loss 3 %"]
    for ax in axes:  # per case: the median and the p90 line
        assert len(ax.get_lines()) == 4
    assert network_latency(RunModel(run=run, sections=sections())) is None


def test_a_run_over_several_machines_shows_them_side_by_side(tmp_path: Path) -> None:
    store = Store(tmp_path / "machines.db")
    run_id = store.new_run("sharded", "?", "time", 2, {}, "", "c0", shard_count=2)
    store.add_points(run_id, [
        {"name": f"records_{size}", "variant": "null", "library": "null", "scenario": "records",
         "params": {"scenario": "records", "payload": size}, "build": BUILDS["null"],
         "shard": shard}
        for shard, size in ((1, 64), (2, 1024))
    ])  # fmt: skip
    machines = [
        store.machine({"host": host, "cpu_model": cpu, "cpu_flags": flags, "kernel": "6.1",
                       "commit_id": "c0", "cores": cores})
        for host, cpu, flags, cores in (("alpha", "CPU A", "aes sse2", 2),
                                        ("beta", "CPU B", "aes sse2 avx512f", 64))
    ]  # fmt: skip
    for shard, point, machine in zip((1, 2), store.points(run_id), machines, strict=True):
        store.claim(run_id, shard, machine)
        for rep in range(2):
            output = driver_output("null", "records", {"payload": point.params["payload"]})
            output = with_samples(output, {"write_ns": [100.0 + rep] * 30,
                                           "read_ns": [90.0] * 30})  # fmt: skip
            store.add_result(point.id, rep, "ok", 0, None, 0.1, STARTED, output, "", machine)
        if shard == 1:
            store.finish_run(run_id, "complete", shard)
    # Before every shard is done, a report refuses and says which shard is missing.
    with pytest.raises(UserError, match=r"shard 2/2 \(running on"):
        store.check_whole(run_id, "report")
    partial = load_run(store, run_id)
    assert any(n.kind == "missing shards" for n in partial.notes)
    store.finish_run(run_id, "complete", 2)
    model = load_run(store, run_id)
    assert [(m.machine, m.cpu_model, m.cores, m.points, m.results) for m in model.machines] == [
        ("alpha", "CPU A", 2, 1, 2), ("beta", "CPU B", 64, 1, 2)
    ]  # fmt: skip
    assert model.machines[1].cpu_flags == "3; only here: avx512f"
    assert {(r.point, r.machine) for r in model.latency} == {
        ("records_64", "alpha"), ("records_1024", "beta")
    }  # fmt: skip
    text = export(model, "markdown")
    assert "## Machines" in text and "| null @ alpha |" in text and "| null @ beta |" in text
    assert not any(n.kind == "missing shards" for n in model.notes)


def test_runs_of_several_machines_are_reported_side_by_side(tmp_path: Path) -> None:
    from tlsbench.report import load_runs

    db = tmp_path / "two.db"
    store = Store(db)
    for host, base in (("alpha", 100.0), ("beta", 60.0)):
        run_id = store.new_run("same", "?", "time", 2, {}, "", "c0")
        store.add_points(run_id, [{"name": "records_64", "variant": "null", "library": "null",
                                   "scenario": "records", "build": BUILDS["null"],
                                   "params": {"scenario": "records", "payload": 64}}])  # fmt: skip
        machine = store.machine({"host": host, "cpu_model": f"CPU {host}", "cpu_flags": "aes",
                                 "kernel": "6.1", "commit_id": "c0"})  # fmt: skip
        store.claim(run_id, 1, machine)
        [point] = store.points(run_id)
        for rep in range(2):
            samples = {"write_ns": [base] * 30, "read_ns": [base / 2] * 30}
            output = with_samples(driver_output("null", "records", {"payload": 64}), samples)
            store.add_result(point.id, rep, "ok", 0, None, 0.1, STARTED, output, "", machine)
        store.finish_run(run_id, "complete")
    model = load_runs(store, [1, 2])
    assert [r.id for r in model.runs] == [1, 2]
    assert {(r.variant, r.op, r.p50_ns) for r in model.latency} == {
        ("null @ alpha", "write", 100.0), ("null @ alpha", "read", 50.0),
        ("null @ beta", "write", 60.0), ("null @ beta", "read", 30.0),
    }  # fmt: skip
    assert [m.host for m in model.machines] == ["alpha", "beta"]
    text = export(model, "markdown")
    assert text.startswith("# tlsbench report: runs 1, 2") and "| null @ beta |" in text
    assert write_plots(model, tmp_path / "plots")  # the machines are two series there too
    store.close()
    proc = subprocess.run([str(paths.REPO / "tlsbench"), "report", "1", "2",
                           "--format", "json", "--db", str(db)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in json.loads(proc.stdout)["runs"]] == [1, 2]


# -- the summary ------------------------------------------------------------------------------


def test_the_report_opens_with_the_summary(model: RunModel) -> None:
    assert [v.name for v in views(model)][:2] == ["summary", "run"]
    markdown = export(model, "markdown")
    assert markdown.index("## Summary") < markdown.index("## Run") < markdown.index("## Handshake")
    page = export(model, "html")
    assert page.index('data-table="summary"') < page.index('data-plot="overview"') \
        < page.index('data-table="run"')  # fmt: skip


def test_the_terminal_summary_is_a_row_per_variant(tmp_path: Path, capsys) -> None:
    from tlsbench.cli import main

    store, _ = build_store(tmp_path / "results.sqlite")
    store.close()
    assert main(["report", "--summary", "--db", str(tmp_path / "results.sqlite")]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert len(lines) < 40
    rows = {line.split()[0]: line.split()[1:] for line in lines
            if line.split() and line.split()[0] in BUILDS}  # fmt: skip
    assert set(rows) == set(BUILDS)  # every variant, the baseline too
    # wolfSSL's handshake: client + server CPU ms, as the Handshake time table has it.
    assert rows[WOLF][0] == fmt_sig(sum(HANDSHAKE_NS[(WOLF, "1.3")]) / 1e6)
    assert "Where each column comes from:" in text

    out = tmp_path / "report.html"
    assert main(["report", "--summary", "--format", "html", "--out", str(out),
                 "--db", str(tmp_path / "results.sqlite")]) == 0  # fmt: skip
    assert capsys.readouterr().out.rstrip().endswith(f"full report: {out}")
    assert out.exists() and (tmp_path / "plots" / "overview.png").exists()
