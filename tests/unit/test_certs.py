"""Test certificates: real generation into a temporary cache, checked with cryptography and
with the openssl command-line tool."""

from __future__ import annotations

import datetime as dt
import ipaddress
import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, SignatureAlgorithmOID

from tlsbench.builds.certs import (
    CERT_FILES,
    KEY_FILES,
    KINDS,
    PUBLISHED_DIGESTS,
    PrivateKey,
    cert_dir,
    digest,
    ensure_all,
    published,
)
from tlsbench.core.errors import UserError

# RSA 3072 and up take seconds to minutes to generate; these cover every key family.
FAST_KINDS = ("rsa1024", "rsa2048", "ecdsa-p256", "ecdsa-p384", "ed25519")
ROLES = ("server", "client")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module", params=FAST_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def folder(kind: str, cache: Path) -> Path:
    return cert_dir(kind, cache)


def load_chain(path: Path) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(path.read_bytes())


def load_cert(path: Path) -> x509.Certificate:
    [cert] = load_chain(path)
    return cert


def load_key(path: Path) -> PrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(
        key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
    )
    return key


def ext(cert: x509.Certificate, kind: type[x509.ExtensionType]) -> x509.Extension:
    return cert.extensions.get_extension_for_class(kind)


def test_kinds_are_the_contract() -> None:
    assert KINDS == (
        "rsa1024",
        "rsa2048",
        "rsa3072",
        "rsa4096",
        "rsa8192",
        "ecdsa-p256",
        "ecdsa-p384",
        "ed25519",
    )


def test_files_exist_with_modes(folder: Path, cache: Path, kind: str) -> None:
    assert folder == cache / "certs" / "v2" / kind
    assert sorted(p.name for p in folder.iterdir()) == sorted((*KEY_FILES, *CERT_FILES))
    for name in KEY_FILES:
        assert (folder / name).stat().st_mode & 0o777 == 0o600, name
        assert (folder / name).read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n"), name
    for name in CERT_FILES:
        assert (folder / name).stat().st_mode & 0o777 == 0o644, name


def test_no_partial_folders_left(folder: Path) -> None:
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]


def test_keys_are_of_the_kind(folder: Path, kind: str) -> None:
    for name in KEY_FILES:
        key = load_key(folder / name)
        if kind.startswith("rsa"):
            assert isinstance(key, rsa.RSAPrivateKey)
            assert key.key_size == int(kind.removeprefix("rsa"))
            assert key.public_key().public_numbers().e == 65537
        elif kind.startswith("ecdsa"):
            assert isinstance(key, ec.EllipticCurvePrivateKey)
            expected = {"ecdsa-p256": ec.SECP256R1, "ecdsa-p384": ec.SECP384R1}[kind]
            assert isinstance(key.curve, expected)
        else:
            assert isinstance(key, ed25519.Ed25519PrivateKey)


def test_signature_algorithms(folder: Path, kind: str) -> None:
    expected = {
        "ecdsa-p256": SignatureAlgorithmOID.ECDSA_WITH_SHA256,
        "ecdsa-p384": SignatureAlgorithmOID.ECDSA_WITH_SHA384,
        "ed25519": SignatureAlgorithmOID.ED25519,
    }.get(kind, SignatureAlgorithmOID.RSA_WITH_SHA256)  # PKCS#1 v1.5, not PSS
    for name in CERT_FILES:
        for cert in load_chain(folder / name):
            assert cert.signature_algorithm_oid == expected, name


@pytest.mark.parametrize("role", ROLES)
def test_chains_have_leaf_first(folder: Path, role: str) -> None:
    ca = load_cert(folder / "ca.pem")
    inter = load_cert(folder / "inter.pem")
    chain1, chain2, chain3 = (load_chain(folder / f"{role}-chain{n}.pem") for n in (1, 2, 3))
    assert len(chain1) == 1 and len(chain2) == 2 and len(chain3) == 3
    assert chain2[1] == inter
    assert chain3 == [*chain2, ca]
    # Two distinct leaves for one key: one under the root, one under the intermediate.
    assert chain1[0] != chain2[0]
    assert chain1[0].issuer == ca.subject and chain2[0].issuer == inter.subject
    key = load_key(folder / f"{role}.key")
    for leaf in (chain1[0], chain2[0]):
        assert leaf.public_key() == key.public_key()


@pytest.mark.parametrize("role", ROLES)
def test_chains_verify(folder: Path, role: str) -> None:
    ca = load_cert(folder / "ca.pem")
    ca.verify_directly_issued_by(ca)
    for n in (1, 2, 3):
        chain = load_chain(folder / f"{role}-chain{n}.pem")
        # A peer may leave out the trust anchor (chains 1 and 2); the verifier supplies it.
        path = chain if n == 3 else [*chain, ca]
        for cert, issuer in itertools.pairwise(path):
            cert.verify_directly_issued_by(issuer)


def test_ca_keys_match_certs(folder: Path) -> None:
    for name in ("ca", "inter", "wrong-ca"):
        key = load_key(folder / f"{name}.key")
        assert load_cert(folder / f"{name}.pem").public_key() == key.public_key()


def test_ca_extensions(folder: Path) -> None:
    ca = load_cert(folder / "ca.pem")
    inter = load_cert(folder / "inter.pem")
    for cert in (ca, inter, load_cert(folder / "wrong-ca.pem")):
        constraints = ext(cert, x509.BasicConstraints)
        assert constraints.critical and constraints.value.ca
        usage = ext(cert, x509.KeyUsage)
        assert usage.critical and usage.value.key_cert_sign and usage.value.crl_sign
        assert not usage.value.digital_signature
        skid = ext(cert, x509.SubjectKeyIdentifier).value
        assert skid == x509.SubjectKeyIdentifier.from_public_key(cert.public_key())
    assert ext(inter, x509.BasicConstraints).value.path_length == 0
    assert ext(inter, x509.AuthorityKeyIdentifier).value.key_identifier == (
        ext(ca, x509.SubjectKeyIdentifier).value.digest
    )


@pytest.mark.parametrize("role", ROLES)
def test_leaves_name_their_issuer_key(folder: Path, role: str) -> None:
    ca = load_cert(folder / "ca.pem")
    inter = load_cert(folder / "inter.pem")
    direct = load_chain(folder / f"{role}-chain1.pem")[0]
    via_inter = load_chain(folder / f"{role}-chain2.pem")[0]
    for leaf, issuer in ((direct, ca), (via_inter, inter)):
        akid = ext(leaf, x509.AuthorityKeyIdentifier).value.key_identifier
        assert akid == ext(issuer, x509.SubjectKeyIdentifier).value.digest
        assert not ext(leaf, x509.BasicConstraints).value.ca


def test_server_leaf_extensions(folder: Path, kind: str) -> None:
    for n in (1, 2):
        leaf = load_chain(folder / f"server-chain{n}.pem")[0]
        assert leaf.subject.rfc4514_string() == "CN=localhost"
        san = ext(leaf, x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == ["localhost"]
        assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
        assert list(ext(leaf, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.SERVER_AUTH]
        usage = ext(leaf, x509.KeyUsage).value
        assert usage.digital_signature
        assert usage.key_encipherment == kind.startswith("rsa")
        assert not usage.key_cert_sign


def test_client_leaf_extensions(folder: Path) -> None:
    for n in (1, 2):
        leaf = load_chain(folder / f"client-chain{n}.pem")[0]
        assert list(ext(leaf, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
        assert ext(leaf, x509.KeyUsage).value.digital_signature


def test_validity_and_serials(folder: Path) -> None:
    serials = set()
    certs = [c for name in CERT_FILES for c in load_chain(folder / name)]
    for cert in certs:
        # A fixed window, whatever the day the set was made: the bytes may not depend on it.
        assert cert.not_valid_before_utc == dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
        assert cert.not_valid_after_utc == dt.datetime(2049, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
        assert cert.not_valid_before_utc < dt.datetime.now(dt.UTC) < cert.not_valid_after_utc
        serials.add(cert.serial_number)
    assert len(serials) == len({c.fingerprint(hashes.SHA256()) for c in certs})


def test_every_key_is_distinct(folder: Path) -> None:
    publics = [load_key(folder / name).public_key() for name in KEY_FILES]
    assert all(a != b for a, b in itertools.combinations(publics, 2))


def test_a_set_is_the_same_bytes_in_two_empty_caches(kind: str, tmp_path: Path) -> None:
    """Two machines (here two empty cache folders) make byte-identical sets: a figure that
    depends on a key is then the same on every machine."""
    first, second = cert_dir(kind, tmp_path / "one"), cert_dir(kind, tmp_path / "two")
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert digest(kind, tmp_path / "one") == digest(kind, tmp_path / "two")


def test_sets_are_the_published_ones(folder: Path, kind: str, cache: Path) -> None:
    """What this machine makes is what the docs' figures were measured with: a change of the
    generator, or a cryptography that encodes otherwise, fails here first."""
    assert published(kind, digest(kind, cache)) is True, (kind, digest(kind, cache))


def test_every_kind_has_a_published_digest() -> None:
    assert sorted(PUBLISHED_DIGESTS) == sorted(KINDS)


def test_a_digest_changes_with_any_byte(tmp_path: Path) -> None:
    before = digest("ed25519", tmp_path)
    pem = cert_dir("ed25519", tmp_path) / "ca.pem"
    pem.chmod(0o644)
    pem.write_bytes(pem.read_bytes().replace(b"-----END", b"\n-----END"))
    assert digest("ed25519", tmp_path) != before


def test_wrong_ca_has_same_name_other_key(folder: Path) -> None:
    ca = load_cert(folder / "ca.pem")
    wrong = load_cert(folder / "wrong-ca.pem")
    assert wrong.subject == ca.subject == wrong.issuer
    assert wrong.public_key() != ca.public_key()
    wrong.verify_directly_issued_by(wrong)
    for role in ROLES:
        leaf = load_chain(folder / f"{role}-chain1.pem")[0]
        with pytest.raises(InvalidSignature):
            leaf.verify_directly_issued_by(wrong)
    with pytest.raises(InvalidSignature):
        load_cert(folder / "inter.pem").verify_directly_issued_by(wrong)


def openssl_verify(folder: Path, ca_file: str, leaf: x509.Certificate, *args: str) -> bool:
    leaf_file = folder.parent.parent / f"leaf-{folder.name}.pem"  # outside the set's folder
    leaf_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    result = subprocess.run(
        ["openssl", "verify", "-CAfile", str(folder / ca_file), *args, str(leaf_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode == 0


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl command not installed")
@pytest.mark.parametrize(("role", "purpose"), [("server", "sslserver"), ("client", "sslclient")])
def test_openssl_verifies_chains(folder: Path, role: str, purpose: str) -> None:
    untrusted = ("-untrusted", str(folder / "inter.pem"))
    direct = load_chain(folder / f"{role}-chain1.pem")[0]
    via_inter = load_chain(folder / f"{role}-chain2.pem")[0]
    assert openssl_verify(folder, "ca.pem", via_inter, *untrusted, "-purpose", purpose)
    assert openssl_verify(folder, "ca.pem", direct, "-purpose", purpose)
    assert not openssl_verify(folder, "wrong-ca.pem", via_inter, *untrusted)
    assert not openssl_verify(folder, "wrong-ca.pem", direct)
    # The intermediate is not trusted by itself: the chain must end at ca.pem.
    assert not openssl_verify(folder, "inter.pem", via_inter)


def test_second_call_reuses_the_set(folder: Path, kind: str, cache: Path) -> None:
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert cert_dir(kind, cache) == folder
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_generation_is_lazy(tmp_path: Path) -> None:
    folder = cert_dir("ed25519", tmp_path)
    assert [p.name for p in folder.parent.iterdir()] == ["ed25519"]


def test_unknown_kind_lists_close_matches(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"unknown certificate kind 'rsa248'") as info:
        cert_dir("rsa248", tmp_path)
    message = str(info.value)
    assert "Did you mean rsa2048" in message
    assert f"Known kinds: {', '.join(KINDS)}" in message
    assert not (tmp_path / "certs").exists()


def test_ensure_all_reports_generated_kinds_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kinds = ("ed25519", "ecdsa-p256")
    cert_dir("ed25519", tmp_path)
    capsys.readouterr()
    result = ensure_all(kinds, tmp_path)
    assert result == {k: tmp_path / "certs" / "v2" / k for k in kinds}
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "ecdsa-p256" in lines[0]
    ensure_all(kinds, tmp_path)
    assert capsys.readouterr().err == ""


def test_ensure_all_checks_every_kind_before_generating(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="ed2551"):
        ensure_all(("ed25519", "ed2551"), tmp_path, progress=False)
    assert not (tmp_path / "certs").exists()


def test_incomplete_set_is_reported(tmp_path: Path) -> None:
    folder = cert_dir("ed25519", tmp_path)
    (folder / "client.key").unlink()
    with pytest.raises(UserError, match=r"incomplete certificate set \(missing client\.key\)"):
        cert_dir("ed25519", tmp_path)


RACER = """
import sys, time
from pathlib import Path
from tlsbench.builds.certs import cert_dir
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
print(cert_dir("ecdsa-p256", Path(sys.argv[1])))
"""


def test_concurrent_processes_agree_on_one_set(tmp_path: Path) -> None:
    cache, go = tmp_path / "cache", tmp_path / "go"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(cache), str(go)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    go.touch()  # releases them together, so several generate and all but one lose the rename
    outputs = [racer.communicate(timeout=60)[0].strip() for racer in racers]
    assert [racer.returncode for racer in racers] == [0] * 4
    folder = cache / "certs" / "v2" / "ecdsa-p256"
    assert set(outputs) == {str(folder)}
    assert [p.name for p in folder.parent.iterdir()] == ["ecdsa-p256"]
    chain = load_chain(folder / "server-chain3.pem")
    for cert, issuer in itertools.pairwise(chain):
        cert.verify_directly_issued_by(issuer)
    assert load_key(folder / "server.key").public_key() == chain[0].public_key()
