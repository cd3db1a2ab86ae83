"""The derived test keys: the same for the same label, different for another, and real keys
(their primes checked by an independent instrument, the openssl command)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from tlsbench.builds import seeded_keys


def test_a_label_gives_one_key_and_another_label_another() -> None:
    one = seeded_keys.rsa_key("test/one", 1024).private_numbers()
    assert one == seeded_keys.rsa_key("test/one", 1024).private_numbers()
    assert one.p != seeded_keys.rsa_key("test/two", 1024).private_numbers().p
    curve = ec.SECP256R1()
    a, b = seeded_keys.ec_key("test/a", curve), seeded_keys.ec_key("test/b", curve)
    assert a.private_numbers() == seeded_keys.ec_key("test/a", curve).private_numbers()
    assert a.private_numbers().private_value != b.private_numbers().private_value


@pytest.mark.parametrize("bits", [1024, 2048])
def test_rsa_keys_have_the_size_and_primes_openssl_accepts(bits: int) -> None:
    numbers = seeded_keys.rsa_key(f"test/{bits}", bits).private_numbers()
    assert numbers.public_numbers.n.bit_length() == bits
    assert numbers.public_numbers.e == 65537
    assert numbers.p.bit_length() == numbers.q.bit_length() == bits // 2
    if shutil.which("openssl") is None:
        pytest.skip("openssl command not installed")
    for prime in (numbers.p, numbers.q):
        out = subprocess.run(["openssl", "prime", str(prime)], capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
        assert out.strip().endswith("is prime"), out


def test_the_prime_search_rejects_composites_and_small_factors() -> None:
    stream = seeded_keys.Stream("test/composites")
    carmichael = 561  # fools Fermat to every base prime to it, never Miller-Rabin
    assert not seeded_keys._is_probable_prime(carmichael * 1_000_003 * 1_000_033, stream)
    assert seeded_keys._is_probable_prime(2**127 - 1, stream)  # a Mersenne prime


def test_serials_are_positive_and_fit_twenty_octets() -> None:
    values = {seeded_keys.serial_number(f"test/serial/{i}") for i in range(50)}
    assert len(values) == 50
    assert all(0 < v < 2**159 + 2 for v in values)


def test_below_is_in_range() -> None:
    stream = seeded_keys.Stream("test/below")
    assert all(0 <= stream.below(7) < 7 for _ in range(200))
