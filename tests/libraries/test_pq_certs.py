"""The post-quantum and mixed certificate sets (certs.TOOL_KINDS), made by the pinned OpenSSL
3.5 build's program into a temporary cache: the same layout as the classical sets, keys of
the kind, chains that verify (with the pinned program, and with the cryptography package
where it knows the algorithm), the same bytes in two empty caches and the published digests."""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, mldsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from tlsbench.builds import build as build_module
from tlsbench.builds.certs import (
    CERT_FILES,
    KEY_FILES,
    LAYOUT_VERSION,
    TOOL_KINDS,
    ca_algorithm,
    cert_dir,
    digest,
    leaf_algorithm,
    published,
)
from tlsbench.core import paths

# The algorithms' OIDs (FIPS 204 / 205 via NIST CSOR) and public key sizes.
OIDS = {
    "ml-dsa-44": "2.16.840.1.101.3.4.3.17",
    "ml-dsa-65": "2.16.840.1.101.3.4.3.18",
    "ml-dsa-87": "2.16.840.1.101.3.4.3.19",
    "slh-dsa-sha2-128s": "2.16.840.1.101.3.4.3.20",
    "slh-dsa-sha2-128f": "2.16.840.1.101.3.4.3.21",
    "ecdsa-p256": "1.2.840.10045.4.3.2",  # ecdsa-with-SHA256
}
# What `openssl pkey -text` says of a key of each algorithm.
OPENSSL_KEY_TEXT = {
    **{f"ml-dsa-{n}": f"ML-DSA-{n} Private-Key:" for n in (44, 65, 87)},
    **{f"slh-dsa-sha2-128{v}": f"SLH-DSA-SHA2-128{v} Private-Key:" for v in "sf"},
    "ecdsa-p256": "ASN1 OID: prime256v1",
}
# Cheap kinds for the two-caches test (the SLH-DSA-128s sets take seconds each to sign).
TWICE = ("ml-dsa-44", "slh-dsa-sha2-128f", "ecdsa-p256-under-ml-dsa-44")


@pytest.fixture(scope="module")
def openssl() -> Path:
    return build_module.certificate_tool("the post-quantum sets under test are made by it")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module", params=TOOL_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def folder(kind: str, cache: Path) -> Path:
    return cert_dir(kind, cache)


def chain(path: Path) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(path.read_bytes())


def run(openssl: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(openssl), *args], capture_output=True, text=True, check=False,
                          env={"OPENSSL_CONF": "/dev/null"})  # fmt: skip


def test_files_exist_with_modes(folder: Path, cache: Path, kind: str) -> None:
    assert folder == cache / "certs" / "v2" / kind
    assert sorted(p.name for p in folder.iterdir()) == sorted((*KEY_FILES, *CERT_FILES))
    for name in KEY_FILES:
        assert (folder / name).stat().st_mode & 0o777 == 0o600, name
        assert (folder / name).read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n"), name
    for name in CERT_FILES:
        assert (folder / name).stat().st_mode & 0o777 == 0o644, name


def test_keys_and_signatures_are_of_the_kind(folder: Path, kind: str, openssl: Path) -> None:
    """CA keys and certificate signatures of the CA's algorithm, leaves of the leaf's."""
    ca, leaf = ca_algorithm(kind), leaf_algorithm(kind)
    for name in KEY_FILES:
        algorithm = leaf if name in ("server.key", "client.key") else ca
        text = run(openssl, "pkey", "-in", str(folder / name), "-noout", "-text").stdout
        assert OPENSSL_KEY_TEXT[algorithm] in text, name
    for name in CERT_FILES:
        for cert in chain(folder / name):
            assert cert.signature_algorithm_oid.dotted_string == OIDS[ca], name
    for role in ("server", "client"):
        for cert in chain(folder / f"{role}-chain3.pem")[:1]:
            spki = cert.public_key_algorithm_oid.dotted_string
            assert spki == ("1.2.840.10045.2.1" if leaf == "ecdsa-p256" else OIDS[leaf]), role


def test_ml_dsa_keys_are_seed_only(folder: Path, kind: str) -> None:
    """The seed-only PKCS#8 form (RFC 9881), the one every library that reads ML-DSA keys
    reads (BoringSSL reads no other): the 32-byte seed under a [0] tag, nothing else."""
    for name in KEY_FILES:
        algorithm = (
            leaf_algorithm(kind) if name in ("server.key", "client.key") else ca_algorithm(kind)
        )
        if not algorithm.startswith("ml-dsa"):
            continue
        pem = (folder / name).read_bytes()
        der = base64.b64decode(b"".join(pem.splitlines()[1:-1]))
        assert len(der) == 54 and der[-34:-32] == b"\x80\x20", name
        key = serialization.load_pem_private_key(pem, None)
        assert isinstance(key, mldsa.MLDSA44PrivateKey | mldsa.MLDSA65PrivateKey
                          | mldsa.MLDSA87PrivateKey)  # fmt: skip


@pytest.mark.parametrize("role", ("server", "client"))
def test_chains_verify_with_the_pinned_program(folder: Path, role: str, openssl: Path) -> None:
    purpose = "sslserver" if role == "server" else "sslclient"
    untrusted = ("-untrusted", str(folder / "inter.pem"))
    for n, extra in ((1, ()), (2, untrusted)):
        target = str(folder / f"{role}-chain{n}.pem")  # verify reads the first certificate
        ok = run(openssl, "verify", "-CAfile", str(folder / "ca.pem"), *extra, "-purpose",
                 purpose, target)  # fmt: skip
        assert ok.returncode == 0, ok.stdout + ok.stderr
        wrong = run(openssl, "verify", "-CAfile", str(folder / "wrong-ca.pem"), *extra, target)
        assert wrong.returncode != 0, n
    not_anchor = run(openssl, "verify", "-CAfile", str(folder / "inter.pem"),
                     str(folder / f"{role}-chain2.pem"))  # fmt: skip
    assert not_anchor.returncode != 0


@pytest.mark.parametrize("role", ("server", "client"))
def test_chains_have_leaf_first_and_verify_independently(
    folder: Path, kind: str, role: str
) -> None:
    ca, inter = chain(folder / "ca.pem")[0], chain(folder / "inter.pem")[0]
    one, two, three = (chain(folder / f"{role}-chain{n}.pem") for n in (1, 2, 3))
    assert len(one) == 1 and two[1:] == [inter] and three == [*two, ca]
    assert one[0].issuer == ca.subject and two[0].issuer == inter.subject
    assert one[0] != two[0]
    if "slh-dsa" in ca_algorithm(kind):
        return  # the cryptography package has no SLH-DSA: the pinned program's test covers it
    # Another implementation than the one that signed (the cryptography package's).
    for path in ([*one, ca], three):
        for cert, issuer in itertools.pairwise(path):
            cert.verify_directly_issued_by(issuer)


def test_extensions_validity_and_serials(folder: Path) -> None:
    ca, inter = chain(folder / "ca.pem")[0], chain(folder / "inter.pem")[0]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert inter.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length == 0
    with pytest.raises(x509.ExtensionNotFound):  # a root names no issuer key
        ca.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)
    leaf = chain(folder / "server-chain2.pem")[0]
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    usage = leaf.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and not usage.key_encipherment
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    akid = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    skid = inter.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert akid.key_identifier == skid.digest
    certs = [c for name in CERT_FILES for c in chain(folder / name)]
    serials = set()
    for cert in certs:
        assert cert.not_valid_before_utc == dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
        assert cert.not_valid_after_utc == dt.datetime(2049, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
        serials.add(cert.serial_number)
    assert len(serials) == 7  # root, intermediate, wrong CA, two leaves per role


def test_a_mixed_kind_pairs_its_two_algorithms(cache: Path) -> None:
    """ml-dsa-44-under-ecdsa-p256: an ML-DSA-44 server key in a certificate an ECDSA CA
    signed; ecdsa-p256-under-ml-dsa-44 the reverse."""
    pq_leaf = cert_dir("ml-dsa-44-under-ecdsa-p256", cache)
    leaf_key = serialization.load_pem_private_key((pq_leaf / "server.key").read_bytes(), None)
    assert isinstance(leaf_key, mldsa.MLDSA44PrivateKey)
    ca_key = serialization.load_pem_private_key((pq_leaf / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    pq_ca = cert_dir("ecdsa-p256-under-ml-dsa-44", cache)
    leaf_key = serialization.load_pem_private_key((pq_ca / "server.key").read_bytes(), None)
    assert isinstance(leaf_key, ec.EllipticCurvePrivateKey)


def test_sets_are_the_published_ones(folder: Path, kind: str, cache: Path) -> None:
    assert published(kind, digest(kind, cache)) is True, (kind, digest(kind, cache))


@pytest.mark.parametrize("twice", TWICE)
def test_a_set_is_the_same_bytes_in_two_empty_caches(twice: str, tmp_path: Path) -> None:
    first, second = cert_dir(twice, tmp_path / "one"), cert_dir(twice, tmp_path / "two")
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_the_certs_command_makes_a_post_quantum_set_in_an_empty_certificate_cache(
    openssl: Path, tmp_path: Path
) -> None:
    """`tlsbench certs --json` in a fresh process (which imports certs.py without the builder
    that registers its tool) makes an ML-DSA set where none is cached: a cache whose builds
    are this one's (so the pinned OpenSSL is not built again) and whose certs folder is empty."""
    real = paths.cache_root()
    for entry in real.iterdir():
        if entry.name != "certs":
            (tmp_path / entry.name).symlink_to(entry)
    kinds = ("ml-dsa-44", "ecdsa-p256-under-ml-dsa-44")
    env = {**os.environ, "TLSBENCH_CACHE": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "tlsbench", "certs", "--json", *kinds],
                          capture_output=True, text=True, check=False, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    made = json.loads(proc.stdout)["kinds"]
    assert {k: (v["folder"], v["published"]) for k, v in made.items()} == {
        k: (str(tmp_path / "certs" / LAYOUT_VERSION / k), True) for k in kinds
    }, proc.stdout
    assert "making the ml-dsa-44 certificates" in proc.stderr
