"""Test keys derived from a name: the same bytes on every machine, with any version of the
libraries that turn them into files.

A figure that depends on a key (an RSA public operation's instructions, an ECDSA verification,
a certificate's DER length, the wire bytes of a handshake) can only be the same on two
machines if the key is. So no key of the test PKI comes from a random generator: each is
derived from its label (`rsa2048/server`, ...) through a SHA-512 counter stream, by arithmetic
that depends on nothing but the label, and the cryptography package only encodes the result.

The keys are public by construction (anyone can derive them from this file): test
credentials, never for use.
"""

from __future__ import annotations

import hashlib
from functools import cache

import gmpy2
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

# Part of every stream's seed: a new derivation (another prime search, say) must change it,
# together with certs.LAYOUT_VERSION, so that no cache mixes keys of two derivations.
DERIVATION = b"tlsbench test keys v2"
PUBLIC_EXPONENT = 65537
# Miller-Rabin rounds on a candidate that passed the sieve and a base-2 Fermat test: with random
# bases from the stream, FIPS 186-5 table B.1 asks for 4 to 5 at these sizes; the key's own
# consistency check (cryptography's, when the key is loaded) is a second guard.
MILLER_RABIN_ROUNDS = 8
# Odd primes below 2^16: most composites are struck out by the sieve before any exponentiation.
SIEVE_LIMIT = 1 << 16


class Stream:
    """Deterministic bytes for one label: SHA-512(DERIVATION, label, counter), block by block."""

    def __init__(self, label: str) -> None:
        self._seed = DERIVATION + b"\0" + label.encode()
        self._counter = 0
        self._buffer = b""

    def take(self, count: int) -> bytes:
        while len(self._buffer) < count:
            block = self._seed + b"\0" + self._counter.to_bytes(8, "big")
            self._buffer += hashlib.sha512(block).digest()
            self._counter += 1
        out, self._buffer = self._buffer[:count], self._buffer[count:]
        return out

    def integer(self, bits: int) -> int:
        """A uniform integer of at most `bits` bits."""
        value = int.from_bytes(self.take((bits + 7) // 8), "big")
        return value >> (-bits % 8)

    def below(self, bound: int) -> int:
        """A uniform integer in [0, bound), by rejection (no modulo bias)."""
        bits = bound.bit_length()
        while True:
            value = self.integer(bits)
            if value < bound:
                return value


@cache
def _odd_small_primes() -> tuple[int, ...]:
    sieve = bytearray([1]) * SIEVE_LIMIT
    sieve[0:2] = b"\0\0"
    for p in range(2, int(SIEVE_LIMIT**0.5) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytes(len(range(p * p, SIEVE_LIMIT, p)))
    return tuple(p for p in range(3, SIEVE_LIMIT) if sieve[p])


def _is_probable_prime(candidate: int, stream: Stream) -> bool:
    n = gmpy2.mpz(candidate)
    if gmpy2.powmod(2, n - 1, n) != 1:  # cheap filter: almost every composite fails here
        return False
    d, shift = n - 1, 0
    while d % 2 == 0:
        d, shift = d // 2, shift + 1
    for _ in range(MILLER_RABIN_ROUNDS):
        x = gmpy2.powmod(2 + stream.below(candidate - 3), d, n)
        if x in (1, n - 1):
            continue
        for _ in range(shift - 1):
            x = gmpy2.powmod(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(stream: Stream, bits: int) -> int:
    """The first probable prime at or above a stream-chosen odd start whose two top bits are
    set (so that the product of two has exactly 2 * bits bits), and p - 1 prime to e."""
    primes = _odd_small_primes()
    while True:
        start = stream.integer(bits) | (0b11 << (bits - 2)) | 1
        window = 16 * bits  # start + 2k for k in range(window): ~1.5 primes expected in it
        struck = bytearray(window)
        for p in primes:
            # start + 2k = 0 (mod p)  <=>  k = -start / 2 (mod p); (p + 1) / 2 is 1/2 mod p.
            first = (-start * ((p + 1) // 2)) % p
            struck[first::p] = b"\1" * len(range(first, window, p))
        for k in range(window):
            candidate = start + 2 * k
            if candidate.bit_length() != bits:
                break
            if struck[k] or (candidate - 1) % PUBLIC_EXPONENT == 0:
                continue
            if _is_probable_prime(candidate, stream):
                return candidate


def rsa_key(label: str, bits: int) -> rsa.RSAPrivateKey:
    """An RSA key of `bits` bits (e = 65537) derived from `label`."""
    stream = Stream(label)
    while True:
        p = _prime(stream, bits // 2)
        q = _prime(stream, bits - bits // 2)
        if p != q:
            break
    p, q = max(p, q), min(p, q)
    lam = (p - 1) * (q - 1) // int(gmpy2.gcd(p - 1, q - 1))
    d = pow(PUBLIC_EXPONENT, -1, lam)
    numbers = rsa.RSAPrivateNumbers(
        p=p,
        q=q,
        d=d,
        dmp1=rsa.rsa_crt_dmp1(d, p),
        dmq1=rsa.rsa_crt_dmq1(d, q),
        iqmp=rsa.rsa_crt_iqmp(p, q),
        public_numbers=rsa.RSAPublicNumbers(PUBLIC_EXPONENT, p * q),
    )
    return numbers.private_key()


# The group orders of the curves the test PKI uses (SEC 2, FIPS 186-5).
_ORDERS = {
    "secp256r1": 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
    "secp384r1": int(
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF581A0DB248B0A77AECEC196ACCC52973",
        16,
    ),
}


def ec_key(label: str, curve: ec.EllipticCurve) -> ec.EllipticCurvePrivateKey:
    """An EC key on `curve` whose scalar is derived from `label`, uniform in [1, n)."""
    order = _ORDERS[curve.name]
    return ec.derive_private_key(1 + Stream(label).below(order - 1), curve)


def ed25519_key(label: str) -> ed25519.Ed25519PrivateKey:
    """An Ed25519 key whose 32-byte seed is derived from `label`."""
    return ed25519.Ed25519PrivateKey.from_private_bytes(Stream(label).take(32))


def serial_number(label: str) -> int:
    """A positive certificate serial of at most 159 bits (RFC 5280: at most 20 octets)."""
    return 1 + Stream(label).integer(159)
