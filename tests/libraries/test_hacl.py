"""HACL*, an AEAD-only library: its ChaCha20-Poly1305 byte for byte (RFC 8439 and OpenSSL on
random inputs), and its refusal of every TLS scenario, by the driver and up front by the
experiment's validation, with the reason."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from drivers import run_driver
from tlsbench.builds.build import Build
from tlsbench.cli import main
from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.core.points import RunPoint
from tlsbench.run import experiments
from tlsbench.run.experiments import check_capabilities

pytestmark = pytest.mark.slow

LIBCRUX = "hacl-libcrux-0.0.2-alpha.3"
HACL = [
    "hacl-0.1.0",
    "hacl-0.1.0:vec128",
    "hacl-0.1.0:i686",
    LIBCRUX,
    f"{LIBCRUX}:vec128",
    f"{LIBCRUX}:vec256",
]
NO_TLS = "AEAD-only library: no TLS"

# RFC 8439 section 2.8.2.
RFC_KEY = "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
RFC_NONCE = "070000004041424344454647"
RFC_AD = "50515253c0c1c2c3c4c5c6c7"
RFC_PLAINTEXT = (
    b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
    b"future, sunscreen would be it."
).hex()
RFC_SEALED = (
    "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69"
    "da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad67594"
    "5585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116"
    "1ae10b594f09e26a7e902ecbd0600691"
)


def adapter_sources(library: str) -> list[str]:
    """An adapter's file and the units it uses, as drivers/CMakeLists.txt compiles them."""
    adapters = paths.DRIVERS / "adapters"
    shared = ["openssl_family.c"] if library in ("openssl", "awslc", "boringssl") else []
    return [str(adapters / name) for name in (f"{library}.c", *shared, "tls_wire.c")] + [
        str(paths.DRIVERS / "core" / "names.c")
    ]


def adapter_program(build: Build, out: Path) -> Path:
    """drivers/tests/aead_adapter.c with the variant's adapter, linked against its build."""
    link = build.manifest["link"]
    program = out / f"aead-{build.variant.name.replace(':', '_')}"
    subprocess.run(
        [
            "gcc", "-std=gnu11", "-O1", *link["c_flags"], f"-I{paths.DRIVERS / 'include'}",
            *(f"-I{d}" for d in link["include_dirs"]), *(f"-D{d}" for d in link["defines"]),
            str(paths.DRIVERS / "tests" / "aead_adapter.c"),
            *adapter_sources(build.variant.library),
            *link["link_flags"], *link["libraries"], "-o", str(program),
        ],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return program


def seal_all(program: Path, cases: list[tuple[str, str, str, str]]) -> list[str]:
    lines = "".join(f"{k} {n} {a or '-'} {p or '-'}\n" for k, n, a, p in cases)
    proc = subprocess.run([str(program)], input=lines, capture_output=True, text=True,
                          check=False, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def cpu_lacks(build: Build) -> str | None:
    """What this CPU lacks that the build's AEAD needs (vec256: AVX2), as its probe says."""
    return build.describe()["probe"].get("cpu_lacks")


@pytest.mark.parametrize("spec", HACL)
def test_the_adapter_seals_the_rfc_8439_vector(spec, build_of, tmp_path) -> None:
    if lacks := cpu_lacks(build_of(spec)):
        pytest.skip(f"this CPU lacks {lacks}: the build refuses (test_aead_scenario_...)")
    program = adapter_program(build_of(spec), tmp_path)
    # Sealed exactly as published; opened back and a flipped tag refused (by the program).
    assert seal_all(program, [(RFC_KEY, RFC_NONCE, RFC_AD, RFC_PLAINTEXT)]) == [RFC_SEALED]


def test_the_adapter_agrees_with_openssl_on_random_inputs(build_of, tmp_path) -> None:
    rng = random.Random(8439)
    # Lengths around ChaCha20's 64-byte blocks, Poly1305's 16-byte blocks and the vec128
    # code's 256-byte stride, and some at random; AD of every length up to 40.
    lengths = [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 255, 256, 257, 1023, 1024, 1350, 4097,
               16384] + [rng.randrange(0, 5000) for _ in range(20)]  # fmt: skip
    cases = [
        (rng.randbytes(32).hex(), rng.randbytes(12).hex(), rng.randbytes(rng.randrange(41)).hex(),
         rng.randbytes(n).hex())
        for n in lengths
    ]  # fmt: skip
    expected = seal_all(adapter_program(build_of("openssl-3.5.x"), tmp_path), cases)
    assert len(expected) == len(cases)
    for spec in (s for s in HACL if not cpu_lacks(build_of(s))):
        assert seal_all(adapter_program(build_of(spec), tmp_path), cases) == expected, spec


@pytest.mark.parametrize("spec", HACL)
def test_aead_scenario_checks_the_known_answer_then_measures(spec, build_of) -> None:
    build = build_of(spec)
    run = run_driver(build, "aead", "--aead", "ChaCha20-Poly1305", "--iterations", "20",
                     "--warmup", "2")  # fmt: skip
    if lacks := cpu_lacks(build):  # on a CPU without what the build needs: refused, saying so
        assert run.code == 3 and f"needs {lacks}, which this CPU lacks" in run.stderr
        return
    assert run.code == 0, run.stderr
    rows = run.output["aead"]
    assert [(r["aead"], r["payload"]) for r in rows] == [
        ("ChaCha20-Poly1305", n) for n in (16, 256, 1350, 16384)
    ]
    assert all(r["tsc_cycles_per_byte"] > 0 and r["open_tsc_cycles_per_byte"] > 0 for r in rows)
    # Which implementation the AEAD is, as the build reports it, is the variant's.
    path = next((f for f in ("vec128", "vec256") if f in build.variant.features), "portable")
    assert run.output["cpu_paths"] == f"chacha20poly1305={path}"
    probe = build.describe()["probe"]
    assert probe["chacha20poly1305"] == path
    assert probe["rfc8439_ok"] is True
    bits = 32 if build.variant.arch == "i686" else 64
    assert probe["pointer_bits"] == bits
    assert ("KRML_NOUINT128" in probe["uint128"]) == (bits == 32)


def test_two_implementations_at_once_and_vec256_of_the_snapshot_are_refused(catalog) -> None:
    from tlsbench.builds.build import Builder

    with pytest.raises(UserError, match="choose one"):
        Builder(quiet=True).key(catalog.resolve(f"{LIBCRUX}:vec128,vec256"))
    with pytest.raises(UserError, match="no 256-bit ChaCha20"):
        Builder(quiet=True).build(catalog.resolve("hacl-0.1.0:vec256"))


def test_aes_gcm_is_unsupported_with_the_reason(build_of) -> None:
    run = run_driver(build_of("hacl-0.1.0"), "aead", "--aead", "AES-128-GCM", "--iterations", "5")
    assert run.code == 3, run.stderr
    assert "no AES-GCM" in run.output["error"]["message"]
    run = run_driver(build_of(LIBCRUX), "aead", "--iterations", "5")  # all three AEADs
    assert run.code == 3, run.stderr
    assert "no AES-GCM" in run.output["error"]["message"]


@pytest.mark.parametrize("scenario", ["handshake", "resume", "records", "bulk"])
def test_every_tls_scenario_is_unsupported_with_the_reason(scenario, build_of) -> None:
    run = run_driver(build_of("hacl-0.1.0"), scenario, "--iterations", "2", "--warmup", "0")
    assert run.code == 3, run.stderr
    assert NO_TLS in run.output["error"]["message"]


def test_info_declares_no_tls(build_of) -> None:
    info = build_of("hacl-0.1.0").info()
    assert info["versions"] == [] and info["suites"] == []
    assert info["no_tls"] == NO_TLS
    assert build_of("openssl-3.5.x").info()["versions"]  # a TLS library declares versions


def point(variant: str, scenario: str, **options: str) -> RunPoint:
    return RunPoint(experiments.point_name(scenario, options), variant, variant.split("-")[0],
                    scenario, options)  # fmt: skip


def test_check_capabilities_names_the_variant_the_point_and_the_reason() -> None:
    infos = {
        "hacl-0.1.0": {"versions": [], "no_tls": NO_TLS},
        "openssl-3.5.x": {"versions": ["1.3"]},
    }
    check_capabilities([point("hacl-0.1.0", "aead"), point("openssl-3.5.x", "handshake")], infos)
    for refused in (point("hacl-0.1.0", "records"),
                    point("openssl-3.5.x", "interop", peer="hacl-0.1.0")):  # fmt: skip
        with pytest.raises(UserError) as exc:
            check_capabilities([refused], infos)
        assert f"hacl-0.1.0: {NO_TLS}; asked for {refused.name}" in str(exc.value)


def test_a_run_asking_hacl_for_tls_is_refused_before_anything_runs(tmp_path, capsys) -> None:
    exp = tmp_path / "mixed.toml"
    exp.write_text(
        'question = "q"\nrepetitions = 1\n[defaults]\niterations = 2\nwarmup = 0\n'
        '[[matrix]]\nvariant = ["hacl-0.1.0"]\nscenario = ["aead"]\naead = ["ChaCha20-Poly1305"]\n'
        '[[matrix]]\nvariant = ["null", "hacl-0.1.0"]\nscenario = ["handshake"]\n'
    )
    db = tmp_path / "t.db"
    assert main(["run", str(exp), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"hacl-0.1.0: {NO_TLS}; asked for handshake" in err
    assert "null" not in err.split("asked for", 1)[1]  # the baseline is not refused
    assert not db.exists()  # refused before the store is touched


def test_the_aead_experiment_puts_hacl_beside_openssl_with_and_without_asm() -> None:
    exp = experiments.load("aead")
    beside = {p.variant for p in exp.points if p.name == "aead_chacha20-poly1305"}
    assert beside == {
        "hacl-0.1.0",
        "hacl-0.1.0:vec128",
        LIBCRUX,
        f"{LIBCRUX}:vec128",
        f"{LIBCRUX}:vec256",
        "openssl-3.5.x",
        "openssl-3.5.x:no-asm",
    }
    assert all(p.options.get("aead") == "ChaCha20-Poly1305" for p in exp.points
               if p.library == "hacl")  # fmt: skip


def test_accel_off_runs_the_portable_build_and_refuses_a_vectorised_one(build_of) -> None:
    from tlsbench.driver.process import accel_env

    for spec, refused in (("hacl-0.1.0", None), (f"{LIBCRUX}:vec256", "is built with vec256")):
        env, reason = accel_env(point(spec, "aead", accel="off"), build_of(spec))
        assert env == {}
        assert reason == (None if refused is None else f"{spec} {refused}")


def test_instruction_mode_refuses_the_avx2_build_valgrind_cannot_run(build_of, tmp_path) -> None:
    from tlsbench.scenarios.modes import run_instructions

    spec = f"{LIBCRUX}:vec256"
    outcome = run_instructions(point(spec, "aead", aead="ChaCha20-Poly1305", payload="16384"),
                               build_of(spec), 60)  # fmt: skip
    assert outcome.status == "unsupported" and "VMOVQ" in outcome.stderr_tail
