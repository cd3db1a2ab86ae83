"""Test certificates for the TLS drivers, made once per key kind and kept in the cache: the
same bytes on every machine.

Layout (other code and the C drivers depend on it):

    <cache>/certs/v2/<KIND>/        KIND in KINDS: rsa1024 ... rsa8192, ecdsa-p256, ecdsa-p384,
                                    ed25519
        ca.pem, ca.key              root CA, self-signed: the trust anchor
        inter.pem, inter.key        intermediate CA signed by the root (pathlen 0)
        server.key                  the server's private key
        server-chain1.pem           leaf signed directly by the root
        server-chain2.pem           a second leaf for the same key, signed by the intermediate,
                                    then the intermediate
        server-chain3.pem           chain2 followed by the root
        client.key, client-chain{1,2,3}.pem
                                    the same for a client certificate (clientAuth)
        wrong-ca.pem, wrong-ca.key  negative control: self-signed CA with exactly the subject
                                    of ca.pem but another key

Every key of a KIND is of that kind: RSA (e=65537) of the given bits, EC on P-256 or P-384,
or Ed25519. Certificates are signed with SHA-256 (RSA PKCS#1 v1.5, P-256), SHA-384 (P-384)
or Ed25519. The server leaf is CN=localhost with SAN DNS:localhost and IP:127.0.0.1.
Certificates are valid from VALID_FROM to VALID_UNTIL (decades, whatever the day they are
made). Keys are unencrypted PKCS#8 PEM with mode 0600, certificates PEM with mode 0644; chain
files list the leaf first.

Deterministic: every key is derived from its label (`seeded_keys`), serial numbers too, the
validity window is fixed and every signature is deterministic (RSA PKCS#1 v1.5, Ed25519,
ECDSA with RFC 6979 nonces). So a kind's folder is the same bytes on every machine, and so
are the figures that depend on a key: instruction counts of RSA and ECDSA operations,
certificate lengths, wire bytes, heap. `digest(kind)` names a set; every run stores the
digests of the kinds it used (`credentials_record`), and `compare` / `ab` refuse two runs
made with different sets. PUBLISHED_DIGESTS are the digests this version makes: a machine
that makes other bytes (another `cryptography` that encodes differently) is told so.

A kind's folder is written under a temporary name and renamed into place when complete, so
a folder under its final name is always a whole set.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import errno
import hashlib
import ipaddress
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import cryptography
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tlsbench.builds import seeded_keys
from tlsbench.core import paths
from tlsbench.core.errors import UserError

KINDS: tuple[str, ...] = (
    "rsa1024",
    "rsa2048",
    "rsa3072",
    "rsa4096",
    "rsa8192",
    "ecdsa-p256",
    "ecdsa-p384",
    "ed25519",
)

# Bump it when the contents change at all (v1 was made with fresh randomness on each
# machine; v2 is derived), so that a set in a user's cache is never taken for another.
LAYOUT_VERSION = "v2"

KEY_FILES = ("ca.key", "inter.key", "server.key", "client.key", "wrong-ca.key")
CERT_FILES = (
    "ca.pem",
    "inter.pem",
    "server-chain1.pem",
    "server-chain2.pem",
    "server-chain3.pem",
    "client-chain1.pem",
    "client-chain2.pem",
    "client-chain3.pem",
    "wrong-ca.pem",
)

# Fixed, so that certificates do not depend on the day they were made; both ends are UTCTime
# (before 2050), which every library reads. The drivers that fix the verification time use the
# root's notBefore plus a day.
VALID_FROM = _dt.datetime(2020, 1, 1, tzinfo=_dt.UTC)
VALID_UNTIL = _dt.datetime(2049, 12, 31, 23, 59, 59, tzinfo=_dt.UTC)

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


@dataclass(frozen=True)
class _Profile:
    key_from: Callable[[str], PrivateKey]  # the key derived from a label
    hash: hashes.SHA256 | hashes.SHA384 | None  # None: Ed25519 hashes internally
    rsa: bool

    def key(self, kind: str, name: str) -> PrivateKey:
        return self.key_from(f"{kind}/{name}")


def _rsa(bits: int) -> Callable[[str], PrivateKey]:
    return lambda label: seeded_keys.rsa_key(label, bits)


def _ec(curve: ec.EllipticCurve) -> Callable[[str], PrivateKey]:
    return lambda label: seeded_keys.ec_key(label, curve)


_PROFILES: dict[str, _Profile] = {
    "rsa1024": _Profile(_rsa(1024), hashes.SHA256(), rsa=True),
    "rsa2048": _Profile(_rsa(2048), hashes.SHA256(), rsa=True),
    "rsa3072": _Profile(_rsa(3072), hashes.SHA256(), rsa=True),
    "rsa4096": _Profile(_rsa(4096), hashes.SHA256(), rsa=True),
    "rsa8192": _Profile(_rsa(8192), hashes.SHA256(), rsa=True),
    "ecdsa-p256": _Profile(_ec(ec.SECP256R1()), hashes.SHA256(), rsa=False),
    "ecdsa-p384": _Profile(_ec(ec.SECP384R1()), hashes.SHA384(), rsa=False),
    "ed25519": _Profile(seeded_keys.ed25519_key, None, rsa=False),
}
assert tuple(_PROFILES) == KINDS


@dataclass(frozen=True)
class _Issuer:
    cert: x509.Certificate
    key: PrivateKey


# What this version of the generator makes, kind by kind (`digest`): the same on every
# machine. A test makes every kind in an empty cache and compares; a change of the generator
# changes them, and then LAYOUT_VERSION must move too.
PUBLISHED_DIGESTS: dict[str, str] = {
    "rsa1024": "758ad7ebf96814d6612859a49586a75c6939d5a553cb37710a6e568be5bb002e",
    "rsa2048": "4b4d0b75a11cb0573baeb8ff65144c05394055ce0c45957ec458d2f4a028ddca",
    "rsa3072": "415d401459516f27266c0e5d0539c71d634e0668bcac30df6eede7d8fd1c7f6d",
    "rsa4096": "665a7f269715b4b947d90c18d47ca9c8ac5dff71454ea2eb934781a64e85d18f",
    "rsa8192": "d40f41d7ecd61cba0318c518cb013a280a23fe20aa832201dc30fedb39aa332b",
    "ecdsa-p256": "54a80d7fe812165d458ff60df87a4beb297eb12af16ed6078e731d8973f8df9c",
    "ecdsa-p384": "b53287a4bb09a06d8e08cbf2ae3aec7672db97254b2ac1b66340abc9cc84ea15",
    "ed25519": "75b1ee997f1214f5f547b65cd3f2f74cdafd45b22a094aca18f545b82650fcd8",
}


def digest(kind: str, cache: Path | None = None) -> str:
    """The sha256 of a kind's set: every file's name and bytes, in name order."""
    folder = cert_dir(kind, cache)
    h = hashlib.sha256(f"tlsbench credentials {LAYOUT_VERSION} {kind}\n".encode())
    for name in sorted((*KEY_FILES, *CERT_FILES)):
        data = (folder / name).read_bytes()
        h.update(f"{name} {len(data)}\n".encode())
        h.update(data)
    return h.hexdigest()


def credentials_record(kinds: Iterable[str], cache: Path | None = None) -> dict[str, object]:
    """What a run stores of the credentials it used: the layout and each kind's digest."""
    return {"layout": LAYOUT_VERSION, "kinds": {k: digest(k, cache) for k in sorted(set(kinds))}}


def published(kind: str, value: str) -> bool | None:
    """Whether `value` is the published digest of `kind` (None: none is published)."""
    expected = PUBLISHED_DIGESTS.get(kind)
    return None if expected is None else expected == value


def cert_dir(kind: str, cache: Path | None = None) -> Path:
    """The folder holding the certificate set for `kind`, generated first if missing."""
    return _ensure(kind, cache, progress=False)


def ensure_all(
    kinds: Iterable[str] = KINDS, cache: Path | None = None, progress: bool = True
) -> dict[str, Path]:
    """Ensures the sets for `kinds` exist; prints a line to stderr per kind it generates."""
    kinds = list(kinds)
    # Checked up front so a typo in the last kind does not cost minutes of RSA 8192 first.
    for kind in kinds:
        _check_kind(kind)
    return {kind: _ensure(kind, cache, progress) for kind in kinds}


def _check_kind(kind: str) -> None:
    if kind in _PROFILES:
        return
    close = difflib.get_close_matches(kind, KINDS, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise UserError(f"unknown certificate kind {kind!r}.{hint} Known kinds: {', '.join(KINDS)}")


def _ensure(kind: str, cache: Path | None, progress: bool) -> Path:
    _check_kind(kind)
    base = (paths.cache_root() if cache is None else cache) / "certs" / LAYOUT_VERSION
    final = base / kind
    if final.exists():
        _check_complete(final)
        return final
    base.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if progress:
        print(f"tlsbench: making the {kind} certificates in {final} ...", end="", file=sys.stderr)
        sys.stderr.flush()
    try:
        _generate_into(kind, final)
    except BaseException:
        if progress:  # ends the line, so an error message does not run on from it
            print(" failed", file=sys.stderr)
        raise
    if progress:
        print(f" done in {time.monotonic() - started:.1f} s", file=sys.stderr)
    made = digest(kind, cache)
    if published(kind, made) is False:
        # Not fatal: the set works, but its figures will not be the docs' or another machine's.
        print(
            f"tlsbench: warning: the {kind} set made here (sha256 {made[:16]}) is not the "
            f"published one ({PUBLISHED_DIGESTS[kind][:16]}): figures that depend on a key "
            "will differ from other machines'; the cryptography package that encoded it is "
            f"{_cryptography_version()} (pyproject.toml pins the one that matches)",
            file=sys.stderr,
        )
    return final


def _cryptography_version() -> str:
    return str(cryptography.__version__)


def _check_complete(folder: Path) -> None:
    # Only a rename puts a folder here, so a gap means someone edited it by hand.
    missing = [name for name in (*KEY_FILES, *CERT_FILES) if not (folder / name).is_file()]
    if missing:
        raise UserError(
            f"{folder} is an incomplete certificate set (missing {', '.join(missing)}); "
            "remove the folder and it will be generated again",
            exit_code=1,
        )


def _generate_into(kind: str, final: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f".{kind}.partial-", dir=final.parent))
    try:
        # mkdtemp makes it 0700; the certificates are meant to be readable like their 0644 says.
        tmp.chmod(0o755)
        _write_set(kind, tmp)
        _fsync_path(tmp)
        _install(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _install(tmp: Path, final: Path) -> None:
    try:
        tmp.rename(final)
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise
        # Another process finished this kind first; its set is as good as ours.
        shutil.rmtree(tmp, ignore_errors=True)
        return
    _fsync_path(final.parent)


def _write_set(kind: str, folder: Path) -> None:
    profile = _PROFILES[kind]
    root_name = _ca_name(kind, "root CA")

    root = _self_signed_ca(profile, kind, "ca", root_name)
    inter_key = profile.key(kind, "inter")
    inter_cert = _sign(
        profile,
        f"{kind}/inter",
        _ca_builder(_ca_name(kind, "intermediate CA"), inter_key, 0),
        root,
    )
    inter = _Issuer(inter_cert, inter_key)
    # Same subject, other key: a verifier matching names only must fail on the signature.
    wrong = _self_signed_ca(profile, kind, "wrong-ca", root_name)

    _write_key(folder / "ca.key", root.key)
    _write_certs(folder / "ca.pem", [root.cert])
    _write_key(folder / "inter.key", inter.key)
    _write_certs(folder / "inter.pem", [inter.cert])
    _write_key(folder / "wrong-ca.key", wrong.key)
    _write_certs(folder / "wrong-ca.pem", [wrong.cert])
    for role in ("server", "client"):
        _write_leaf_set(profile, kind, folder, role, root, inter)


def _write_leaf_set(
    profile: _Profile, kind: str, folder: Path, role: str, root: _Issuer, inter: _Issuer
) -> None:
    key = profile.key(kind, role)
    direct = _sign(profile, f"{kind}/{role}-direct", _leaf_builder(profile, role, key), root)
    via_inter = _sign(profile, f"{kind}/{role}-via-inter", _leaf_builder(profile, role, key), inter)
    _write_key(folder / f"{role}.key", key)
    _write_certs(folder / f"{role}-chain1.pem", [direct])
    _write_certs(folder / f"{role}-chain2.pem", [via_inter, inter.cert])
    _write_certs(folder / f"{role}-chain3.pem", [via_inter, inter.cert, root.cert])


def _ca_name(kind: str, what: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tlsbench"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"tlsbench {kind} {what}"),
        ]
    )


def _self_signed_ca(profile: _Profile, kind: str, name: str, subject: x509.Name) -> _Issuer:
    key = profile.key(kind, name)
    # RFC 5280 lets a self-signed root omit AuthorityKeyIdentifier; only issued certs get one.
    builder = (
        _ca_builder(subject, key, path_length=None)
        .issuer_name(subject)
        .serial_number(seeded_keys.serial_number(f"{kind}/{name}/serial"))
        .not_valid_before(VALID_FROM)
        .not_valid_after(VALID_UNTIL)
    )
    return _Issuer(_signed(builder, key, profile), key)


def _ca_builder(
    name: x509.Name, key: PrivateKey, path_length: int | None
) -> x509.CertificateBuilder:
    ca_usage = _key_usage(key_cert_sign=True, crl_sign=True)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .public_key(key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
        .add_extension(ca_usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )


def _leaf_builder(profile: _Profile, role: str, key: PrivateKey) -> x509.CertificateBuilder:
    builder = (
        x509.CertificateBuilder()
        .public_key(key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if role == "client":
        # A client only ever signs (CertificateVerify), whatever its key type.
        return (
            builder.subject_name(_leaf_name("tlsbench client"))
            .add_extension(_key_usage(digital_signature=True), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        )
    # Static-RSA key exchange encrypts the premaster secret to the server's key.
    usage = _key_usage(digital_signature=True, key_encipherment=profile.rsa)
    names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    return (
        builder.subject_name(_leaf_name("localhost"))
        .add_extension(usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
    )


def _leaf_name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(
    *,
    digital_signature: bool = False,
    key_encipherment: bool = False,
    key_cert_sign: bool = False,
    crl_sign: bool = False,
) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=crl_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _sign(
    profile: _Profile, label: str, builder: x509.CertificateBuilder, issuer: _Issuer
) -> x509.Certificate:
    issuer_skid = issuer.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        builder.issuer_name(issuer.cert.subject)
        .serial_number(seeded_keys.serial_number(f"{label}/serial"))
        .not_valid_before(VALID_FROM)
        .not_valid_after(VALID_UNTIL)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(issuer_skid),
            critical=False,
        )
    )
    return _signed(builder, issuer.key, profile)


def _signed(
    builder: x509.CertificateBuilder, key: PrivateKey, profile: _Profile
) -> x509.Certificate:
    if isinstance(key, ec.EllipticCurvePrivateKey):
        # RFC 6979 nonces: a random one would make every ECDSA certificate differ by machine.
        return builder.sign(key, profile.hash, ecdsa_deterministic=True)
    return builder.sign(key, profile.hash)  # PKCS#1 v1.5 and Ed25519 are deterministic


def _write_key(path: Path, key: PrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_file(path, pem, 0o600)


def _write_certs(path: Path, certs: list[x509.Certificate]) -> None:
    _write_file(path, b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs), 0o644)


def _write_file(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        # The umask may have narrowed `mode`; fixing it before any byte is written never
        # exposes a key, unlike a chmod afterwards.
        os.fchmod(f.fileno(), mode)
        f.write(data)
        f.flush()
        # Without this a crash after the rename could leave a complete-looking folder of
        # empty files.
        os.fsync(f.fileno())


def _fsync_path(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
