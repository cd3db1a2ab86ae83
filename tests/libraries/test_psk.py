"""Pre-shared keys: TLS 1.3 external PSKs (psk_ke, psk_dhe_ke) and TLS 1.2 PSK and ECDHE-PSK
suites, in every library that has them (real builds, real handshakes), refused with the
reason where a library or build has not; the negative control (the client holds another
key) fails the handshake everywhere, and the checks of the mode are seen to fire.

The driver gives both sides tlsbench's fixed test key and identity (`--kx psk|psk_dhe`); no
certificate is loaded, sent or verified.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers import TLS_LIBRARIES, run_driver, tlsbench
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.peers import interop
from tlsbench.run import experiments

pytestmark = pytest.mark.slow

# The default wolfSSL build has no PSK (NO_PSK): the feature builds one that has.
WOLFSSL_PSK = "wolfssl-5.7.2:psk"
LIBRARIES = [*TLS_LIBRARIES, WOLFSSL_PSK]
OPENSSL = ("openssl-3.5.x", "openssl-system", "openssl-1.1.1w")
BSSL = ("aws-lc-5.12.0", "boringssl-5.4.0")
# TLS 1.2 suites every library with PSK has (AWS-LC and BoringSSL have no PSK suite with
# SHA-256, nor an ECDHE-PSK one with AES-GCM).
TLS12_SUITE = {"psk": "TLS_PSK_WITH_AES_128_CBC_SHA",
               "psk_dhe": "TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256"}  # fmt: skip


def refusal(spec: str, tls: str, kx: str) -> str | None:
    """Why `spec` cannot run this PSK job (its driver's reason), or None."""
    if spec.startswith("rustls-"):
        return "rustls has no pre-shared keys"
    if spec.startswith("bearssl-"):
        return "BearSSL has no pre-shared keys"
    if spec.startswith("s2n-") and tls == "1.2":
        return "s2n-tls has no TLS 1.2 PSK suites"
    if spec.startswith("s2n-") and kx == "psk":
        return "s2n-tls does TLS 1.3 psk_dhe_ke only"
    if spec.startswith("nss-"):
        return "NSS has no TLS 1.2 PSK suites"
    if spec.startswith("botan-") and tls == "1.2" and kx == "psk":
        return "TLS 1.2 CBC suites need tls_cbc"  # TLS12_SUITE["psk"] is a CBC suite
    if spec.startswith("botan-") and kx == "psk":
        return "Botan 3 does TLS 1.3 psk_dhe_ke only"
    if spec == "wolfssl-5.7.2":
        return "variant feature psk"
    if spec == "mbedtls-2.28.x" and tls == "1.3":
        return "no usable TLS 1.3"
    if spec in BSSL and tls == "1.3":
        return "no TLS 1.3 external PSK"
    if spec in OPENSSL and tls == "1.3" and kx == "psk":
        return "cannot offer psk_ke alone"
    return None


def job(tls: str, kx: str) -> list[str]:
    suite = ["--suite", TLS12_SUITE[kx]] if tls == "1.2" else []
    return ["--tls", tls, "--kx", kx, *suite]


@pytest.mark.parametrize("kx", ["psk", "psk_dhe"])
@pytest.mark.parametrize("tls", ["1.3", "1.2"])
@pytest.mark.parametrize("spec", LIBRARIES)
def test_each_library_handshakes_with_each_psk_mode_or_says_why_not(spec, tls, kx,
                                                                    build_of) -> None:  # fmt: skip
    run = run_driver(build_of(spec), "handshake", *job(tls, kx), "--iterations", "2",
                     "--warmup", "0")  # fmt: skip
    reason = refusal(spec, tls, kx)
    if reason is not None:
        assert run.code == 3, (run.code, run.stderr)
        assert reason in run.output["error"]["message"], run.output["error"]
        assert "samples" not in run.output
        return
    assert run.code == 0, run.stderr
    n = run.output["negotiated"]
    assert n["version"] == tls and n["psk"] == kx
    # The key alone agrees on no group; nothing is signed or verified.
    assert n["group"] == ("" if kx == "psk" else "x25519")
    assert n["sigalg"] == "" and "client_sigalg" not in n
    assert n["peer_verified"] == {"client": False, "server": False} and not n["resumed"]
    params = run.output["params"]
    assert params["kx"] == kx and params["cert"] is None and params["auth"] == "none"
    assert "chain" not in params and params["sigalg"] is None
    assert len(run.output["samples"]["client_cpu_ns"]) == 2


@pytest.mark.parametrize("tls", ["1.3", "1.2"])
@pytest.mark.parametrize("spec", LIBRARIES)
def test_a_wrong_key_fails_the_handshake(spec, tls, build_of) -> None:
    """The negative control, as --wrong-ca is the certificates': the client holds a key one
    bit away from the server's."""
    kx = "psk_dhe" if tls == "1.3" else "psk"
    if refusal(spec, tls, kx) is not None:
        pytest.skip(f"{spec} refuses TLS {tls} {kx} (the test above checks why)")
    run = run_driver(build_of(spec), "handshake", *job(tls, kx), "--iterations", "1",
                     "--warmup", "0", "--fault", "psk-key")  # fmt: skip
    assert run.code == 5, (run.code, run.stderr)
    assert run.output["error"]["stage"].startswith("handshake"), run.output["error"]
    assert "samples" not in run.output


@pytest.mark.parametrize("asked", ["psk", "psk_dhe"])
@pytest.mark.parametrize("spec", LIBRARIES)
def test_the_tls13_mode_check_fires(spec, asked, build_of) -> None:
    """--fault kx gives both sides the other mode: the mode read back from the library (or
    off the ServerHello) must differ from the one asked, exit 4 naming both."""
    other = "psk_dhe" if asked == "psk" else "psk"
    if refusal(spec, "1.3", asked) is not None:
        pytest.skip(f"{spec} refuses TLS 1.3 {asked} (checked above)")
    run = run_driver(build_of(spec), "handshake", "--kx", asked, "--iterations", "1",
                     "--warmup", "0", "--fault", "kx")  # fmt: skip
    why = refusal(spec, "1.3", other)
    if why is not None:  # the fault asks the library for the mode it cannot do
        assert run.code == 3 and why in run.stderr, (run.code, run.stderr)
        return
    assert run.code == 4, (run.code, run.stderr)
    assert (f"negotiated pre-shared key exchange '{other}', the run asked for '{asked}'"
            in run.stderr)  # fmt: skip
    assert "samples" not in run.output


@pytest.mark.parametrize("spec", LIBRARIES)
def test_the_suite_and_version_checks_fire_for_psk(spec, build_of) -> None:
    """TLS 1.2: the suite names the mode, so the suite check is the mode's (a PSK suite
    swapped with its ECDHE-PSK counterpart); and the version check, a PSK run moved to the
    other version."""
    suite = "TLS_PSK_WITH_AES_128_CBC_SHA" if spec in BSSL else "TLS_PSK_WITH_AES_128_CBC_SHA256"
    if refusal(spec, "1.2", "psk") is not None:
        pytest.skip(f"{spec} has no TLS 1.2 PSK (checked above)")
    swapped = suite.replace("TLS_PSK_", "TLS_ECDHE_PSK_")
    run = run_driver(build_of(spec), "handshake", "--tls", "1.2", "--suite", suite,
                     "--iterations", "1", "--warmup", "0", "--fault", "suite")  # fmt: skip
    assert run.code == 4, (run.code, run.stderr)
    assert f"negotiated suite '{swapped}', the run asked for '{suite}'" in run.stderr
    if refusal(spec, "1.3", "psk_dhe") is None:
        run = run_driver(build_of(spec), "handshake", "--kx", "psk_dhe", "--iterations", "1",
                         "--warmup", "0", "--fault", "version")  # fmt: skip
        assert run.code == 4, (run.code, run.stderr)
        assert "negotiated version '1.2', the run asked for '1.3'" in run.stderr


@pytest.mark.parametrize("spec", LIBRARIES)
def test_tls12_psk_sessions_resume(spec, build_of) -> None:
    if refusal(spec, "1.2", "psk_dhe") is not None:
        pytest.skip(f"{spec} has no TLS 1.2 PSK (checked above)")
    run = run_driver(build_of(spec), "resume", *job("1.2", "psk_dhe"), "--iterations", "3",
                     "--warmup", "1")  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output["negotiated"]["resumed"] is True
    assert run.output["negotiated"]["group"] == ""  # an abbreviated handshake agrees on none


def test_the_heap_driver_measures_a_psk_handshake(build_of) -> None:
    run = run_driver(build_of("mbedtls-3.6.6"), "handshake", "--kx", "psk", "--iterations",
                     "2", "--warmup", "0", measure="heap")  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output["heap"]["client"]["conn_peak"] > 0
    assert run.output["heap"]["server"]["conn_peak"] > 0


# What the driver refuses before anything runs: the options of a PSK run that mean nothing
# with a key, and combinations that cannot be asked for (exit 2, a message saying why).
USAGE_ERRORS = [
    (["--kx", "psk", "--auth", "mutual"], "--auth mutual verifies certificates"),
    (["--kx", "psk", "--auth", "server"], "--auth server verifies certificates"),
    (["--kx", "psk_dhe", "--cert", "ecdsa-p256"], "--cert does not apply"),
    (["--kx", "psk", "--chain", "2"], "--chain does not apply"),
    (["--kx", "psk", "--sigalg", "rsa_pss_rsae_sha256"], "--sigalg does not apply"),
    (["--kx", "psk", "--wrong-ca"], "its negative control is --fault psk-key"),
    (["--kx", "psk", "--group", "x25519"], "--kx psk agrees on no group"),
    (["--kx", "rsa"], "TLS 1.3 has no RSA key exchange"),
    (["--kx", "pks"], "--kx must be ecdhe, rsa, psk or psk_dhe, not pks"),
    (["--tls", "1.2", "--kx", "psk", "--suite", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
     "is a suite of --kx ecdhe: --kx psk does not apply"),
    (["--tls", "1.2", "--suite", "TLS_RSA_PSK_WITH_AES_128_GCM_SHA256"], "RSA-PSK"),
    (["--kx", "psk", "--fault", "sigalg"], "--fault sigalg has no counterpart"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS)
def test_options_a_psk_run_cannot_take_are_usage_errors(args, message, build_of) -> None:
    run = run_driver(build_of("mbedtls-3.6.6"), "handshake", *args, "--iterations", "1")
    assert run.code == 2, (run.code, run.stderr)
    assert message in run.stderr, run.stderr
    assert "samples" not in (run.output or {})


@pytest.mark.parametrize(("scenario", "args"), [
    ("resume", []),
    ("peer", ["--role", "client", "--connect", "127.0.0.1:1", "--peer-resume"]),
    ("load", ["--connect", "127.0.0.1:1", "--pattern", "resume", "--duration", "1"]),
])  # fmt: skip
def test_tls13_resumption_of_a_psk_run_is_refused(scenario, args, build_of) -> None:
    """The client would offer the ticket and the external key at once."""
    run = run_driver(build_of("mbedtls-3.6.6"), scenario, "--kx", "psk_dhe", *args)
    assert run.code == 2, (run.code, run.stderr)
    assert "a TLS 1.3 resumption is itself a pre-shared key handshake" in run.stderr


# ------------------------------------------------------------------------- experiments


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "psk.toml"
    path.write_text('question = "PSK?"\n' + body)
    return path


def test_a_psk_point_drops_what_a_key_makes_meaningless(tmp_path: Path) -> None:
    path = write(tmp_path, """
[defaults]
scenario = "handshake"
auth = "mutual"
group = "x25519"

[matrix]
variant = ["mbedtls-3.6.6"]
tls = ["1.3", "1.2"]
kx = ["ecdhe", "psk", "psk_dhe"]
cert = ["rsa2048", "ecdsa-p256"]
""")  # fmt: skip
    points = {p.name: p for p in experiments.load(str(path)).points}
    # Two certificates, but a PSK point has none: one point each, not two.
    assert len(points) == 2 * 2 + 2 * 2
    psk = points["handshake_1.3_psk"]
    assert psk.driver_args() == ["--tls", "1.3", "--kx", "psk"]
    assert points["handshake_1.3_psk_dhe_x25519"].driver_args() == [
        "--tls", "1.3", "--kx", "psk_dhe", "--group", "x25519"]  # fmt: skip
    assert "handshake_1.3_ecdhe_x25519_ecdsa-p256_mutual" in points
    # A TLS 1.2 PSK suite without kx: the same dropping, the suite says the mode.
    path = write(tmp_path, """
[defaults]
scenario = "handshake"
variant = "openssl-3.5.x"
tls = "1.2"
cert = "ecdsa-p256"

[matrix]
suite = ["TLS_PSK_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA256"]
""")  # fmt: skip
    names = [p.name for p in experiments.load(str(path)).points]
    assert names == ["handshake_1.2_psk_aes_128_gcm_sha256",
                     "handshake_1.2_ecdhe_psk_aes_128_cbc_sha256"]  # fmt: skip


@pytest.mark.parametrize(("body", "message"), [
    ('kx = "pks"', "kx = 'pks' (a string) is not allowed: did you mean psk?"),
    ('kx = "rsa"\ntls = "1.3"', 'with tls = "1.2" only'),
    ('kx = "psk"\ntls = "1.2"\nsuite = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"',
     '"ecdhe" with suite TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256'),
    ('tls = "1.2"\nsuite = "TLS_RSA_PSK_WITH_AES_128_GCM_SHA256"', "RSA-PSK"),
    ('kx = "psk"\nkey_share = "secp256r1"', "with key_share"),
    ('kx = "psk_dhe"\nscenario = "resume"', "without TLS 1.3 resumption"),
    ('kx = "psk"\nscenario = "interop"\npeer = "self"\nresume = "on"',
     "without TLS 1.3 resumption"),
])  # fmt: skip
def test_a_psk_point_that_cannot_be_is_refused_when_loaded(tmp_path: Path, body: str,
                                                           message: str) -> None:  # fmt: skip
    scenario = "" if "scenario" in body else 'scenario = "handshake"\n'
    path = write(tmp_path, f'[defaults]\n{scenario}variant = "mbedtls-3.6.6"\n{body}\n'
                 "[matrix]\niterations = [1]\n")  # fmt: skip
    with pytest.raises(UserError) as caught:
        experiments.load(str(path))
    assert message in str(caught.value)


# ------------------------------------------------------------------------- two processes


def run_experiment(tmp_path: Path, text: str) -> Store:
    path = tmp_path / "two.toml"
    path.write_text('question = "PSK in two processes?"\nrepetitions = 1\ntimeout = 60\n' + text)
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(path), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    return Store(db)


def results(store: Store) -> dict[tuple[str, str], dict]:
    found = {}
    for point in store.points(store.run("latest")["id"]):
        row = store.results(point.id)[0]
        assert row["status"] == "ok", (point.name, point.variant, row["stderr_tail"])
        found[(point.variant, point.name)] = json.loads(row["output"])
    return found


TWO_LIBRARIES = ["mbedtls-3.6.6", WOLFSSL_PSK, "openssl-3.5.x", "gnutls-3.8.x"]


def test_libraries_talk_psk_to_each_other_in_two_processes_and_under_load(
    tmp_path: Path, build_of
) -> None:
    for spec in TWO_LIBRARIES:
        build_of(spec)
    variants = json.dumps(TWO_LIBRARIES)
    store = run_experiment(tmp_path, f"""
[defaults]
iterations = 2
warmup = 1

[[matrix]]
scenario = ["interop"]
variant = {variants}
peer = {variants}
kx = ["psk_dhe"]

[[matrix]]
scenario = ["interop"]
variant = ["mbedtls-3.6.6"]
peer = ["{WOLFSSL_PSK}", "gnutls-3.8.x"]
kx = ["psk"]
tls = ["1.3", "1.2"]

[[matrix]]
scenario = ["load"]
variant = ["gnutls-3.8.x"]
client = ["self", "mbedtls-3.6.6"]
kx = ["psk_dhe"]
pattern = ["new"]
duration_s = [1]
connections = [2]
""")  # fmt: skip
    found = results(store)
    assert len(found) == 16 + 4 + 2
    for (variant, name), output in found.items():
        negotiated = output["negotiated"]
        kx = "psk_dhe" if "psk_dhe" in name else "psk"
        assert negotiated["psk"] == kx, (variant, name, negotiated)
        assert negotiated["sigalg"] == "" and not negotiated["resumed"]
        if name.startswith("load"):
            assert output["load"]["handshakes"] > 0 and output["load"]["errors"] == 0


def test_real_programs_take_the_drivers_key(tmp_path: Path, build_of) -> None:
    """openssl s_server / s_client (the machine's 3.0 and the pinned 3.5) and gnutls-serv /
    gnutls-cli, given the driver's key and identity, at either end of a tlsbench side."""
    for spec in ("openssl-3.5.x", "mbedtls-3.6.6"):
        build_of(spec)
    servers = json.dumps(["openssl-s_server", "openssl-3.5.x-s_server", "gnutls-serv"])
    clients = json.dumps(["openssl-s_client", "openssl-3.5.x-s_client", "gnutls-cli"])
    store = run_experiment(tmp_path, f"""
[defaults]
scenario = "interop"
iterations = 2
warmup = 1

[[matrix]]
variant = ["openssl-3.5.x"]
peer = {servers}
tls = ["1.3", "1.2"]
kx = ["psk_dhe"]

[[matrix]]
variant = ["mbedtls-3.6.6"]
role = ["server"]
peer = {clients}
tls = ["1.3", "1.2"]
kx = ["psk"]

[[matrix]]
variant = ["mbedtls-3.6.6"]
peer = {servers}
kx = ["psk"]
""")  # fmt: skip
    found = results(store)
    assert len(found) == 6 + 6 + 3
    for (variant, name), output in found.items():
        kx = "psk_dhe" if "psk_dhe" in name else "psk"
        assert output["negotiated"]["psk"] == kx, (variant, name)
    # What a program cannot do is said, never run with something else.
    refused = interop.program_side("nginx", {"kx": "psk"}, 1, 1, tmp_path)
    assert isinstance(refused, str) and "certificates only" in refused
    refused = interop.program_side(
        "gnutls-serv", {"kx": "psk_dhe", "suite": "TLS_AES_256_GCM_SHA384"}, 1, 1, tmp_path
    )
    assert isinstance(refused, str) and "binds a TLS 1.3 external PSK to SHA-256" in refused
