"""The post-quantum certificate sets (ML-DSA, FIPS 204; SLH-DSA, FIPS 205), and the mixed
chains of a post-quantum leaf under a classical CA and the reverse, made by a pinned tool:
the `openssl` program of the pinned OpenSSL 3.5 build. The cryptography package that makes
the classical sets cannot sign with SLH-DSA, and a pinned program makes the same bytes on
every machine, as the pinned package does for the others.

Deterministic like the classical sets (certs.py): every key comes from a seed derived from
its label (`seeded_keys.Stream`): ML-DSA's 32-byte seed (FIPS 204 ML-DSA.KeyGen_internal's
xi, `-pkeyopt hexseed:`), SLH-DSA's 3n bytes (SK.seed, SK.prf and PK.seed of FIPS 205
slh_keygen_internal, the same option), an ECDSA scalar as certs.py derives it; serial
numbers and the validity window are fixed; every signature is deterministic (ML-DSA's
deterministic variant, rnd = 0^32, and SLH-DSA's, opt_rand = PK.seed: the providers'
`deterministic` parameter, `-sigopt deterministic:1`; ECDSA with RFC 6979 nonces,
`-sigopt nonce-type:1`). ML-DSA private keys are written in the seed-only PKCS#8 form
(RFC 9881's recommended one, and the only one BoringSSL reads).

This module only turns a plan into file contents (`make_set`); certs.py owns the layout, the
digests and the writing.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tlsbench.builds import seeded_keys
from tlsbench.core.errors import UserError


@dataclass(frozen=True)
class Algorithm:
    """A key algorithm as the OpenSSL program names it, and how its key is derived."""

    name: str  # tlsbench's name (the kind's part): ml-dsa-44, slh-dsa-sha2-128s, ecdsa-p256
    openssl: str  # genpkey's -algorithm ("" for ECDSA, whose key certs.py's derivation makes)
    seed_bytes: int  # the seed genpkey takes (0: none)
    sigopts: tuple[str, ...]  # what makes its signatures deterministic
    digest: str | None = None  # the hash a certificate signature takes (None: the scheme's own)

    @property
    def post_quantum(self) -> bool:
        return bool(self.openssl)


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("ml-dsa-44", "ML-DSA-44", 32, ("deterministic:1",)),
        Algorithm("ml-dsa-65", "ML-DSA-65", 32, ("deterministic:1",)),
        Algorithm("ml-dsa-87", "ML-DSA-87", 32, ("deterministic:1",)),
        # n = 16 at category 1: SK.seed, SK.prf and PK.seed.
        Algorithm("slh-dsa-sha2-128s", "SLH-DSA-SHA2-128s", 48, ("deterministic:1",)),
        Algorithm("slh-dsa-sha2-128f", "SLH-DSA-SHA2-128f", 48, ("deterministic:1",)),
        Algorithm("ecdsa-p256", "", 0, ("nonce-type:1",), digest="sha256"),
    )
}

POST_QUANTUM = tuple(name for name, a in ALGORITHMS.items() if a.post_quantum)

# Extensions as certs.py writes them for the classical sets: the same roles, the same
# usages (a post-quantum key never enciphers), in the same order on every run.
EXTENSIONS = """\
[root]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = none
[inter]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
[server]
basicConstraints = critical, CA:FALSE
subjectKeyIdentifier = hash
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
authorityKeyIdentifier = keyid:always
[client]
basicConstraints = critical, CA:FALSE
subjectKeyIdentifier = hash
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid:always
"""


@dataclass(frozen=True)
class Plan:
    """What one kind's set is made of: the CA's algorithm (root, intermediate, wrong CA) and
    the leaves' (server and client keys)."""

    kind: str
    ca: Algorithm
    leaf: Algorithm
    valid_from: str  # OpenSSL's -not_before, e.g. 20200101000000Z
    valid_until: str
    root_subject: str  # -subj of the root and of the wrong CA
    inter_subject: str


def make_set(plan: Plan, openssl: Path) -> dict[str, bytes]:
    """Every file of the kind's set (certs.KEY_FILES and CERT_FILES) by name, made with the
    pinned `openssl` program in a scratch folder."""
    with tempfile.TemporaryDirectory(prefix=f"tlsbench-{plan.kind}-") as scratch:
        return _Maker(plan, openssl, Path(scratch)).files()


class _Maker:
    def __init__(self, plan: Plan, openssl: Path, scratch: Path) -> None:
        self.plan, self.openssl, self.scratch = plan, openssl, scratch
        (scratch / "extensions.cnf").write_text(EXTENSIONS)
        # No configuration file of the build's (its OPENSSLDIR) may change what is made.
        (scratch / "empty.cnf").write_text("")
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "OPENSSL_CONF": str(scratch / "empty.cnf")}  # fmt: skip

    def run(self, *args: str) -> bytes:
        command = [str(self.openssl), *args]
        proc = subprocess.run(command, capture_output=True, env=self.env, cwd=self.scratch,
                              check=False)  # fmt: skip
        if proc.returncode != 0:
            raise UserError(
                f"making the {self.plan.kind} certificates: `{' '.join(command)}` failed "
                f"(exit {proc.returncode}): {proc.stderr.decode(errors='replace').strip()}",
                exit_code=1,
            )
        return proc.stdout

    def key(self, algorithm: Algorithm, name: str) -> Path:
        """The key `name` of the set (its label `KIND/NAME`), written to the scratch folder."""
        label = f"{self.plan.kind}/{name}"
        path = self.scratch / f"{name}.key"
        if algorithm.post_quantum:
            seed = seeded_keys.Stream(label).take(algorithm.seed_bytes).hex()
            formats = "ml-dsa.output_formats=seed-only"
            self.run("genpkey", "-algorithm", algorithm.openssl, "-pkeyopt", f"hexseed:{seed}",
                     "-provparam", formats, "-out", path.name)  # fmt: skip
        else:
            key = seeded_keys.ec_key(label, ec.SECP256R1())
            pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            path.write_bytes(pem)
        return path

    def certificate(self, name: str, subject: str, key: Path, extensions: str,
                    issuer: tuple[Path, Path, Algorithm] | None) -> Path:  # fmt: skip
        """A certificate for `key`'s public key: self-signed (issuer None) or signed by the
        issuer's (certificate, key, algorithm); its serial derived from `KIND/NAME/serial`."""
        path = self.scratch / f"{name}.pem"
        serial = seeded_keys.serial_number(f"{self.plan.kind}/{name}/serial")
        signer = issuer[2] if issuer else self._algorithm_of(key)
        args = ["x509", "-new", "-subj", subject, "-set_serial", hex(serial),
                "-not_before", self.plan.valid_from, "-not_after", self.plan.valid_until,
                "-extfile", "extensions.cnf", "-extensions", extensions]  # fmt: skip
        if issuer is None:
            args += ["-key", key.name]
        else:
            public = self.scratch / f"{name}.pub"
            public.write_bytes(self.run("pkey", "-in", key.name, "-pubout"))
            args += ["-force_pubkey", public.name, "-CA", issuer[0].name, "-CAkey", issuer[1].name]
        if signer.digest:
            args.append(f"-{signer.digest}")
        for option in signer.sigopts:
            args += ["-sigopt", option]
        self.run(*args, "-out", path.name)
        return path

    def _algorithm_of(self, key: Path) -> Algorithm:
        return self.plan.ca if key.stem in ("ca", "inter", "wrong-ca") else self.plan.leaf

    def files(self) -> dict[str, bytes]:
        plan = self.plan
        ca_key, inter_key = self.key(plan.ca, "ca"), self.key(plan.ca, "inter")
        wrong_key = self.key(plan.ca, "wrong-ca")
        root = self.certificate("ca", plan.root_subject, ca_key, "root", None)
        inter = self.certificate("inter", plan.inter_subject, inter_key, "inter",
                                 (root, ca_key, plan.ca))  # fmt: skip
        # Same subject, other key: a verifier matching names only must fail on the signature.
        wrong = self.certificate("wrong-ca", plan.root_subject, wrong_key, "root", None)
        out = {name: (self.scratch / name).read_bytes()
               for name in ("ca.key", "inter.key", "wrong-ca.key")}  # fmt: skip
        out |= {"ca.pem": root.read_bytes(), "inter.pem": inter.read_bytes(),
                "wrong-ca.pem": wrong.read_bytes()}  # fmt: skip
        for role in ("server", "client"):
            key = self.key(plan.leaf, role)
            subject = "/CN=localhost" if role == "server" else "/CN=tlsbench client"
            direct = self.certificate(f"{role}-direct", subject, key, role,
                                      (root, ca_key, plan.ca)).read_bytes()  # fmt: skip
            via_inter = self.certificate(f"{role}-via-inter", subject, key, role,
                                         (inter, inter_key, plan.ca)).read_bytes()  # fmt: skip
            out[f"{role}.key"] = key.read_bytes()
            out[f"{role}-chain1.pem"] = direct
            out[f"{role}-chain2.pem"] = via_inter + out["inter.pem"]
            out[f"{role}-chain3.pem"] = via_inter + out["inter.pem"] + out["ca.pem"]
        return out
