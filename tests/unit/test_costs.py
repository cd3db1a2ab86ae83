"""Cost by function without a build: the shared rule table, a side's costs and their sums,
the diff `ab` explains a verdict with, and callgrind's output format read back
(tests/null/test_callgrind_atomics.py and tests/libraries/test_explain.py run real ones)."""

from __future__ import annotations

import pytest

from tlsbench.core import costs
from tlsbench.core.costs import FunctionCost, diff_costs, group_of, side_costs
from tlsbench.driver import callgrind


def test_one_table_names_the_groups_of_host_and_firmware() -> None:
    host, firmware = costs.group_labels("host"), costs.group_labels("firmware")
    # The firmware's groups are the host's but for what only the host has.
    assert set(host) - set(firmware) == {"dispatch", "locks", "rust_runtime"}
    assert list(firmware) == ["public_key", "hashing", "symmetric", "asn1_x509", "tls", "memory",
                              "libc", "harness", "other"]  # fmt: skip
    assert firmware["harness"] == "firmware harness (pipes, timer interrupt)"
    # Host rules never move a firmware function.
    assert group_of("pthread_rwlock_rdlock", "", "libc", scope="firmware") == "libc"
    assert group_of("pthread_rwlock_rdlock", "pthread_rwlock_rdlock.c", "libc") == "locks"
    assert group_of("psa_import_key", "psa_crypto.c", "library", scope="firmware") == "other"


@pytest.mark.parametrize(("name", "source", "origin", "group"), [
    ("EVP_MD_up_ref", "digest.c", "library", "dispatch"),
    ("ossl_method_store_fetch", "property.c", "library", "dispatch"),
    ("OSSL_PARAM_locate", "params.c", "library", "dispatch"),
    ("pthread_rwlock_unlock", "pthread_rwlock_unlock.c", "libc", "locks"),
    ("CRYPTO_THREAD_read_lock", "threads_pthread.c", "library", "locks"),
    ("malloc_consolidate", "malloc.c", "libc", "memory"),
    ("CRYPTO_malloc", "mem.c", "library", "memory"),
    ("__memcpy_avx_unaligned_erms", "memmove-vec-unaligned-erms.S", "libc", "libc"),
    ("bn_sqr8x_internal", "x86_64-mont5.s", "library", "public_key"),
    ("sha256_block_data_order_avx2", "sha256-x86_64.s", "library", "hashing"),
    ("aesni_gcm_encrypt", "aesni-gcm-x86_64.s", "library", "symmetric"),
    ("asn1_item_embed_d2i", "tasn_dec.c", "library", "asn1_x509"),
    ("tls_process_server_hello", "statem_clnt.c", "library", "tls"),
    ("mbedtls_mpi_core_mla", "bignum_core.c", "library", "public_key"),
    ("<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop", "", "library", "rust_runtime"),
    ("rustls::conn::ConnectionCommon<Data>::process_new_packets", "", "library", "tls"),
    ("handshake", "session.c", "harness", "harness"),
])  # fmt: skip
def test_host_rules(name: str, source: str, origin: str, group: str) -> None:
    assert group_of(name, source, origin) == group


def _function(name: str, instructions: int, atomics: int = 0, calls: int = 1,
              group: str = "tls") -> FunctionCost:  # fmt: skip
    return FunctionCost(name, "x.c", "tlsbench-driver", group, instructions, atomics, calls)


def test_a_side_sums_exactly_or_is_refused() -> None:
    side = side_costs("client", 10, [_function("a", 700, 3), _function("b", 300, 0, 5, "memory")])
    assert (side.instructions, side.atomics) == (1000, 3)
    assert side.functions[0].name == "a" and side.per_operation(side.instructions) == 100
    groups = {g.group: g for g in side.groups()}
    assert groups["tls"].instructions == 700 and groups["memory"].calls == 5
    assert sum(g.instructions for g in groups.values()) == 1000
    assert groups["public_key"].instructions == 0  # every group of the scope, empty ones too
    with pytest.raises(ValueError, match="sum to 1000, the total is 1001"):
        costs.SideCosts("client", 10, 1001, 3, side.functions)
    again = costs.SideCosts.from_json(side.to_json())
    assert again == side
    # Stored under another rule table, read under today's: the same counts, today's groups.
    stale = side_costs("client", 10, [FunctionCost("pthread_rwlock_rdlock", "", "libc.so.6",
                                                   "other", 70, 2, 1, "libc")])  # fmt: skip
    assert [f.group for f in stale.regrouped().functions] == ["locks"]
    assert stale.regrouped().instructions == 70


def test_an_object_without_symbols_is_a_group_of_its_own() -> None:
    group = costs.object_group("libcrypto.so.3")
    side = side_costs("client", 1, [_function("EVP_MD_free", 50, 2, group=group)],
                      unsymbolised=["libcrypto.so.3"])  # fmt: skip
    [only] = [g for g in side.groups() if g.instructions]
    assert only.label == "libcrypto.so.3 (no symbols: the whole library file)"


def test_the_diff_names_the_changed_function_first_in_both_directions() -> None:
    before = side_costs("client", 10, [_function("hot", 5000), _function("steady", 3000),
                                       _function("shrinks", 2000, 40)])  # fmt: skip
    after = side_costs("client", 20, [_function("hot", 30000, calls=4),
                                      _function("steady", 6000), _function("shrinks", 1000, 10),
                                      _function("new", 20)])  # fmt: skip
    diff = diff_costs(before, after, top=3)
    # Per operation: hot 500 -> 1500, shrinks 200 -> 50, new 0 -> 1; steady 300 -> 300.
    assert [c.name for c in diff.functions] == ["hot", "shrinks", "new"]
    assert diff.functions[0].before["instructions"] == 500
    assert diff.functions[0].after == {"instructions": 1500, "atomics": 0, "calls": 0.2}
    assert diff.functions[1].change("instructions") == -150
    assert "steady" not in [c.name for c in diff.functions]
    assert [c.name for c in diff.groups] == ["tls"]
    assert (diff.before_total, diff.after_total) == (1000, 1851)
    by_atomics = diff_costs(before, after, measure="atomics")
    assert [c.name for c in by_atomics.functions] == ["shrinks"]
    with pytest.raises(ValueError, match="measure 'bytes'"):
        diff_costs(before, after, measure="bytes")


# A callgrind output as valgrind 3.19 writes it with --dump-instr=yes: compressed names,
# positions relative to the last cost line, a call's inclusive cost that is the callee's,
# a recursion level and a versioned name.
CALLGRIND_OUT = """# callgrind format
version: 1
positions: instr line
events: Ir Ge
summary: 125 3

ob=(1) /nonexistent/tlsbench-driver
fl=(1) ???
fn=(1) caller
0x1000 0 10
+4 * 5
cfn=(2) callee
calls=7 0x2000 0
* * 999 99
+2 * 5 1

fn=(2)
0x2000 0 70 2
+3 * 20

fn=(3) callee'2
0x2000 0 5

ob=(2) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(2) ./nptl/pthread_rwlock_unlock.c
fn=(4) pthread_rwlock_unlock@@GLIBC_2.34
0x500 0 10

totals: 125 3
"""


def test_callgrinds_format_read_back() -> None:
    profile = callgrind.parse(CALLGRIND_OUT)
    assert profile.totals == {"Ir": 125, "Ge": 3}
    by_name = {f.name: f for f in profile.functions}
    assert set(by_name) == {"caller", "callee", "pthread_rwlock_unlock"}
    assert (by_name["caller"].instructions, by_name["caller"].atomics) == (20, 1)
    # The call's inclusive 999 is not the caller's; the recursion level is the callee's.
    assert by_name["callee"].instructions == 95 and by_name["callee"].atomics == 2
    assert by_name["callee"].entry_address == 0x2000 and by_name["callee"].entry_count == 75
    side = callgrind.side_costs(profile, "client", 5)
    assert side.instructions == 125 and side.atomics == 3
    groups = {f.name: f.group for f in side.functions}
    assert groups["pthread_rwlock_unlock"] == "locks"
    assert {f.name: f.calls for f in side.functions}["callee"] == 75
    wrong = CALLGRIND_OUT.replace("totals: 125 3", "totals: 126 3")
    with pytest.raises(ValueError, match="callgrind's totals"):
        callgrind.side_costs(callgrind.parse(wrong), "client", 5)


def test_archive_member_names() -> None:
    assert callgrind.member_source("ecp.c.o") == "ecp.c"
    assert callgrind.member_source("libcrypto-lib-x86_64-mont5.o") == "x86_64-mont5.s"
    assert callgrind.member_source("libcrypto-lib-evp_fetch.o") == "evp_fetch.s"
    assert callgrind.member_source("src_libwolfssl_la-aes_asm.o") == "aes_asm.s"
    assert callgrind.member_source("6cca901d1d9807b8-sha256-x86_64.o") == "sha256-x86_64.s"
    assert callgrind.member_source("rustls.d996129fbfc5cc16-cgu.09.rcgu.o") == "rustls (Rust crate)"
