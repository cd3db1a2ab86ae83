"""s2n-tls's TLS 1.2 CBC suites: refused, and why, checked against the libcrypto the line
builds on (docs/libraries.md, s2n-tls).

s2n-tls 1.7.6 turns padding off before it sets a CBC decryption key; AWS-LC 5.12's
EVP_CipherInit_ex clears that, and its EVP_DecryptUpdate then withholds a record's last
block without writing it, which s2n reads as the record's padding and MAC. The first test
runs s2n's order of calls on the pinned AWS-LC (and the other order, which works): when a new
AWS-LC no longer withholds the block, it fails, and the adapter's refusal can be lifted.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from drivers import run_driver

pytestmark = pytest.mark.slow

# crypto/s2n_cbc_cipher_aes.c's decryption: EVP_CIPHER_CTX_set_padding(ctx, 0), then
# EVP_DecryptInit_ex with the cipher and key, then per record EVP_DecryptInit_ex with the IV
# and one EVP_DecryptUpdate over the whole record, whose returned length s2n does not read.
S2N_ORDER = r"""
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  unsigned char key[16] = {1}, iv[16] = {2}, plain[32], ct[32], out[32];
  for (int i = 0; i < 32; i++) plain[i] = (unsigned char)i;
  EVP_CIPHER_CTX *e = EVP_CIPHER_CTX_new();
  int n = 0;
  EVP_EncryptInit_ex(e, EVP_aes_128_cbc(), NULL, key, iv);
  EVP_CIPHER_CTX_set_padding(e, 0);
  EVP_EncryptUpdate(e, ct, &n, plain, 32);
  for (int after = 0; after < 2; after++) {
    EVP_CIPHER_CTX *d = EVP_CIPHER_CTX_new();
    if (!after) EVP_CIPHER_CTX_set_padding(d, 0);
    EVP_DecryptInit_ex(d, EVP_aes_128_cbc(), NULL, key, NULL);
    if (after) EVP_CIPHER_CTX_set_padding(d, 0);
    EVP_DecryptInit_ex(d, NULL, NULL, NULL, iv);
    memset(out, 0xee, sizeof(out));
    n = 0;
    int ok = EVP_DecryptUpdate(d, out, &n, ct, 32);
    printf("%s %d %d %s\n", after ? "after" : "before", ok, n,
           memcmp(out + 16, plain + 16, 16) == 0 ? "written" : "withheld");
    EVP_CIPHER_CTX_free(d);
  }
  return 0;
}
"""


def test_the_pinned_aws_lc_withholds_the_block_s2n_reads(tmp_path: Path, build_of) -> None:
    prefix = build_of("aws-lc-5.12.0").folder / "prefix"
    source = tmp_path / "s2n_order.c"
    source.write_text(S2N_ORDER)
    program = tmp_path / "s2n_order"
    subprocess.run(["gcc", "-O1", f"-I{prefix / 'include'}", "-o", str(program), str(source),
                    str(prefix / "lib" / "libcrypto.a"), "-lpthread"], check=True)  # fmt: skip
    lines = subprocess.run([str(program)], capture_output=True, text=True, check=True,
                           timeout=60).stdout.splitlines()  # fmt: skip
    # s2n's order: padding is back on, the second (last) block is withheld and not written.
    # Padding turned off after the key: both blocks are decrypted and written.
    assert lines == ["before 1 16 withheld", "after 1 32 written"], lines


@pytest.mark.parametrize("suite", ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
                                   "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"])  # fmt: skip
def test_s2n_refuses_the_cbc_suites_with_that_reason(suite: str, build_of) -> None:
    run = run_driver(build_of("s2n-tls-1.7.6"), "handshake", "--tls", "1.2", "--suite", suite,
                     "--iterations", "1", "--warmup", "0")  # fmt: skip
    assert run.code == 3, (run.code, run.stderr)
    message = run.output["error"]["message"]
    assert f"no suite '{suite}'" in message and "withholds each record's last block" in message
    assert "samples" not in run.output
