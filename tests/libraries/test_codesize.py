"""Code size: real minimal client/server programs linked statically against real builds.

Every line here is one the other tests build anyway (tests/drivers.py's TLS_LIBRARIES, and
Botan's own tests): code size adds two links per line, and a handshake of milliseconds.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.builds import arches, codesize
from tlsbench.builds.variants import Catalog
from tlsbench.core import paths
from tlsbench.core.errors import UserError

# The lines that link statically, each measured and its two programs joined over loopback.
STATIC_LINES = [
    "mbedtls-3.6.6", "mbedtls-2.28.x", "wolfssl-5.7.2", "bearssl-0.6", "openssl-3.5.x",
    "openssl-1.1.1w", "openssl-system", "boringssl-5.4.0", "aws-lc-5.12.0", "gnutls-3.8.x",
    "s2n-tls-1.7.6", "rustls-ffi-0.15.7", "botan-3.x",
]  # fmt: skip


@pytest.mark.parametrize("spec", STATIC_LINES)
def test_each_static_line_links_its_real_handshake_and_it_runs(
    spec: str, build_of, tmp_path: Path
) -> None:
    """Both programs link the library's own handshake code (a symbol of its handshake state
    machine, as nm lists it) and no shared library of its, run one handshake over loopback
    with the client verifying the chain, fail it against the wrong CA (the negative
    control), and measure a TLS stack's bytes, the same in another link (measure, as the
    command and the runner call it)."""
    build = build_of(spec)
    programs = codesize.link_programs(build, tmp_path)
    handshake = codesize.PROGRAMS[build.variant.library].handshake
    target = arches.arch(build.variant.arch)
    for role, program in programs.items():
        assert any(re.search(handshake[role], s) for s in codesize.text_symbols(program, target))
        # Static: nothing shared but the C library and the compiler's runtime (GnuTLS's
        # nettle, hogweed and GMP, the C++ runtime of BoringSSL, AWS-LC and Botan inside).
        dynamic = subprocess.run(["readelf", "-d", str(program)], capture_output=True,
                                 text=True, check=True).stdout  # fmt: skip
        needed = set(re.findall(r"Shared library: \[lib([a-z_+0-9]+)\.so", dynamic))
        assert needed <= codesize.SHARED_RUNTIME, needed
    codesize.run_handshake(build, programs)
    with pytest.raises(UserError, match="handshake over loopback failed"):
        codesize.run_handshake(build, programs, ca="wrong-ca.pem")
    rows = codesize.as_rows(build, codesize.sizes(build, programs))
    assert [r["role"] for r in rows] == ["client", "server"]
    for row in rows:
        assert row["target"] == "x86-64"
        # A TLS stack with X.509 and a handshake is far more than an empty program's ~2 kB.
        assert row["text"] > 100_000
        assert row["total"] == row["text"] + row["data"] + row["bss"]
    assert rows == codesize.as_rows(build, codesize.measure(build))


def test_by_archive_says_which_archive_brought_the_bytes(build_of, tmp_path: Path) -> None:
    """From the linker's map: GnuTLS's figure holds nettle, hogweed, GMP and libtasn1 from
    their archives, Botan's the C++ runtime's, the library's own archive the most; the rows
    add up to `size`'s figures with little left between input sections (alignment)."""
    others = {
        "gnutls-3.8.x": ("libgnutls.a", {"libnettle.a", "libhogweed.a", "libgmp.a", "libtasn1.a"}),
        "botan-3.x": ("libbotan-3.a", {"libstdc++.a"}),
    }
    for spec, (own, theirs) in others.items():
        build = build_of(spec)
        programs = codesize.link_programs(build, tmp_path / spec.replace(".", "_"))
        origins = codesize.by_archive(build, programs)
        for size in codesize.sizes(build, programs):
            rows = origins[size.role]
            assert theirs <= {r.origin for r in rows}, rows
            assert max(rows, key=lambda r: r.total).origin == own
            assert sum(r.text for r in rows) == size.text and sum(r.bss for r in rows) == size.bss
            [padding] = [r for r in rows if r.origin == codesize.PADDING]
            assert 0 <= padding.text < size.text // 50 and padding.data >= 0 and padding.bss >= 0


def test_a_program_without_the_handshake_is_refused(
    build_of, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The symbol check fires: a pattern no code symbol matches refuses the measurement."""
    real = codesize.PROGRAMS["bearssl"]
    wrong = codesize.Program(real.source, {"client": "^no_such_handshake$",
                                           "server": real.handshake["server"]})  # fmt: skip
    monkeypatch.setitem(codesize.PROGRAMS, "bearssl", wrong)
    with pytest.raises(UserError, match="client program links no code symbol matching"):
        codesize.link_programs(build_of("bearssl-0.6"), tmp_path)


def test_a_shared_only_library_refuses_the_line_with_the_reason(build_of) -> None:
    """Debian's GnuTLS links p11-kit, of which Debian ships no archive: the line says so."""
    with pytest.raises(codesize.NotStatic, match=r"-lp11-kit .*shared library only"):
        codesize.measure(build_of("gnutls-system"))


def test_static_libraries_turns_libraries_into_archives() -> None:
    target = arches.arch("x86_64")
    link = {"libraries": ["/x/libfoo.a", "-lstdc++", "-lpthread", "-ldl", "-Wl,--as-needed"]}
    out = codesize.static_libraries("v", link, "gcc", target)
    assert out[0] == "/x/libfoo.a" and out[1].endswith("/libstdc++.a") and Path(out[1]).is_file()
    assert out[2:] == ["-lpthread", "-ldl", "-Wl,--as-needed"]
    with pytest.raises(codesize.NotStatic, match=r"shared library libssl3\.so"):
        codesize.static_libraries("v", {"libraries": ["/x/libssl3.so"]}, "gcc", target)
    with pytest.raises(codesize.NotStatic, match="-lno-such-thing"):
        codesize.static_libraries("v", {"libraries": ["-lno-such-thing"]}, "gcc", target)


def test_every_tls_library_has_a_program_or_a_reason(catalog: Catalog) -> None:
    for library in set(catalog.libraries) - {"null", "hacl"}:
        assert codesize.has_tls(library), library
        if codesize.supported(library):
            program = codesize.PROGRAMS[library]
            assert (paths.DRIVERS / "embedded" / program.source).is_file()
    assert not codesize.has_tls("null") and not codesize.has_tls("hacl")
    assert "NSS_STATIC_SOFTOKEN" in (codesize.refusal(catalog.resolve("nss-3.110")) or "")


def test_cli_prints_a_row_per_role_or_the_reason() -> None:
    """The issue's command: every line's two rows; NSS's reason beside measured lines (exit
    0), alone a refusal (exit 2); a line without TLS a usage error."""
    done = tlsbench("code-size", "--quiet", "bearssl-0.6", "openssl-3.5.x", "boringssl-5.4.0",
                    "rustls-ffi-0.15.7", "nss-3.110")  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["variant", "target", "role", "text", "data", "bss"]
    rows = [line.split() for line in lines[1:]]
    measured = [(r[0], r[2]) for r in rows if r[2] in ("client", "server")]
    asked = ("bearssl-0.6", "openssl-3.5.x", "boringssl-5.4.0", "rustls-ffi-0.15.7")
    assert measured == [(v, role) for v in asked for role in ("client", "server")]
    assert all(int(r[3]) > 100_000 for r in rows if r[2] in ("client", "server"))
    [nss] = [line for line in lines if line.startswith("nss-3.110")]
    assert "not measured: NSS links no static program" in nss
    as_json = tlsbench("code-size", "--quiet", "--json", "bearssl-0.6", "nss-3.110")
    assert as_json.returncode == 0, as_json.stderr
    parsed = json.loads(as_json.stdout)
    assert [r.get("role", "refused") for r in parsed] == ["client", "server", "refused"]
    alone = tlsbench("code-size", "nss-3.110")
    assert alone.returncode == 2 and "NSS_STATIC_SOFTOKEN" in alone.stderr
    assert "Traceback" not in alone.stderr and alone.stdout == ""
    refused = tlsbench("code-size", "null")
    assert refused.returncode == 2 and "null has no TLS" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_cli_handshake_runs_the_programs_first_and_by_archive_splits_them() -> None:
    done = tlsbench("code-size", "--quiet", "--handshake", "mbedtls-2.28.x")
    assert done.returncode == 0, done.stderr
    assert [line.split()[2] for line in done.stdout.splitlines()[1:]] == ["client", "server"]
    split = tlsbench("code-size", "--quiet", "--by-archive", "--json", "mbedtls-2.28.x")
    assert split.returncode == 0, split.stderr
    for row in json.loads(split.stdout):
        origins = {a["origin"]: a for a in row["archives"]}
        assert {"libmbedtls.a", "libmbedx509.a", "libmbedcrypto.a"} <= set(origins)
        assert sum(a["text"] for a in row["archives"]) == row["text"]


def test_code_size_points_run_store_and_report(tmp_path, build_of) -> None:
    """`scenario = "code-size"` in an experiment: the runner links and measures each
    repetition; the report's table has a row per role, the same in every repetition, and a
    stacked chart; NSS's point is unsupported with the reason; a variant without TLS is
    refused before anything runs."""
    from tlsbench.core.store import Store
    from tlsbench.report import load_run
    from tlsbench.reportkit.contents import plots
    from tlsbench.run import experiments

    for spec in ("mbedtls-3.6.6", "bearssl-0.6", "nss-3.110"):
        build_of(spec)
    experiment = tmp_path / "size.toml"
    experiment.write_text('question = "How big?"\nrepetitions = 2\n[matrix]\n'
                          'variant = ["mbedtls-3.6.6", "bearssl-0.6", "nss-3.110"]\n'
                          'scenario = ["code-size"]\n')  # fmt: skip
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db), timeout=900)
    assert proc.returncode == 0, proc.stderr
    store = Store(db)
    model = load_run(store)
    rows = model.code_size
    expected = [("bearssl-0.6", "client"), ("bearssl-0.6", "server"),
                ("mbedtls-3.6.6", "client"), ("mbedtls-3.6.6", "server")]  # fmt: skip
    assert sorted((r.variant, r.role) for r in rows) == expected
    mbedtls = build_of("mbedtls-3.6.6")
    direct = {r["role"]: r for r in codesize.as_rows(mbedtls, codesize.measure(mbedtls))}
    for row in rows:
        assert row.identical and row.target == "x86-64" and row.text > 100_000
        if row.variant == "mbedtls-3.6.6":
            assert row.text == direct[row.role]["text"]  # the same bytes as the command's
    run_id = store.run("latest")["id"]
    [nss] = [p for p in store.points(run_id) if p.variant == "nss-3.110"]
    results = store.results(nss.id)
    assert {r["status"] for r in results} == {"unsupported"}
    assert "NSS_STATIC_SOFTOKEN" in str(results[0]["output"])
    assert "code_size" in [p.name for p in plots(model)]
    report = tlsbench("report", "--db", str(db), "--format", "md")
    assert report.returncode == 0 and "## Code size (bytes)" in report.stdout
    experiment.write_text('question = "How big?"\n[matrix]\nvariant = ["null"]\n'
                          'scenario = ["code-size"]\n')  # fmt: skip
    with pytest.raises(UserError, match='with scenario = "code-size", a variant of a TLS'):
        experiments.load(str(experiment))


def test_a_variant_with_two_targets_is_refused_with_the_reason() -> None:
    """cortex-m7 and armhf in one variant: one build cannot be both, so the spec is refused
    (exit 2) instead of printing rows labelled with whichever target came last."""
    done = tlsbench("code-size", "--quiet", "mbedtls-3.6.6:cortex-m7,armhf")
    assert done.returncode == 2, done.stdout
    assert "two targets" in done.stderr and "cortex-m7" in done.stderr
    assert "armhf" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
