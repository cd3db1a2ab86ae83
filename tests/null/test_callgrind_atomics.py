"""What callgrind's `--collect-bus=yes` counts on x86-64, found out on a small program: the
"global bus events" tlsbench stores as atomic operations (docs/methodology.md, "Atomic
operations per handshake"). Each function runs one kind of instruction N times between
the collection toggles, and its count is read back through driver/callgrind.py, the reader
instruction mode uses: a LOCK-prefixed read-modify-write (`lock xadd`, `lock cmpxchg`) and
an XCHG with a memory operand (implicitly locked) count once each; a store with release
semantics and a load with acquire semantics (plain MOVs on x86-64), MFENCE and an XCHG of
two registers do not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tlsbench.driver import callgrind

pytestmark = pytest.mark.skipif(
    not (shutil.which("valgrind") and shutil.which("cc")), reason="needs valgrind and cc"
)

N = 1000
PROGRAM = r"""
#include <stdlib.h>
#include <valgrind/callgrind.h>

static volatile long word;

__attribute__((noinline)) void lock_xadd(long n) {
  for (long i = 0; i < n; i++) {
    long one = 1;
    __asm__ volatile("lock xaddq %0, %1" : "+r"(one), "+m"(word)::"memory");
  }
}
__attribute__((noinline)) void lock_cmpxchg(long n) {
  for (long i = 0; i < n; i++) {
    long expected = word;
    __asm__ volatile("lock cmpxchgq %2, %1"
                     : "+a"(expected), "+m"(word)
                     : "r"(expected + 1)
                     : "memory");
  }
}
__attribute__((noinline)) void xchg_memory(long n) {
  for (long i = 0; i < n; i++) {
    long v = i;
    __asm__ volatile("xchgq %0, %1" : "+r"(v), "+m"(word)::"memory");
  }
}
__attribute__((noinline)) void release_store(long n) {
  for (long i = 0; i < n; i++) __atomic_store_n(&word, i, __ATOMIC_RELEASE);
}
__attribute__((noinline)) void acquire_load(long n) {
  long sum = 0;
  for (long i = 0; i < n; i++) sum += __atomic_load_n(&word, __ATOMIC_ACQUIRE);
  word = sum;
}
__attribute__((noinline)) void mfence_only(long n) {
  for (long i = 0; i < n; i++) __asm__ volatile("mfence" ::: "memory");
}
__attribute__((noinline)) void xchg_registers(long n) {
  for (long i = 0; i < n; i++) {
    long a = i, b = n;
    __asm__ volatile("xchgq %0, %1" : "+r"(a), "+r"(b));
  }
}

int main(int argc, char **argv) {
  long n = atol(argv[1]);
  CALLGRIND_TOGGLE_COLLECT;
  lock_xadd(n);
  lock_cmpxchg(n);
  xchg_memory(n);
  release_store(n);
  acquire_load(n);
  mfence_only(n);
  xchg_registers(n);
  CALLGRIND_TOGGLE_COLLECT;
  return 0;
}
"""
# What each function's N instructions of its kind count as bus events.
COUNTED = {"lock_xadd": N, "lock_cmpxchg": N, "xchg_memory": N}
NOT_COUNTED = ("release_store", "acquire_load", "mfence_only", "xchg_registers")


@pytest.fixture(scope="module")
def costs(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("atomics")
    source, program, out = work / "atomics.c", work / "atomics", work / "callgrind.out"
    source.write_text(PROGRAM)
    subprocess.run(["cc", "-O2", "-g", "-o", str(program), str(source)], check=True)
    done = subprocess.run([*callgrind.command_prefix(out), str(program), str(N)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return callgrind.read_costs(Path(out), "client", N)


def test_locked_instructions_count_and_plain_ordering_does_not(costs) -> None:
    by_name = {f.name: f for f in costs.functions}
    for name, count in COUNTED.items():
        assert by_name[name].atomics == count, name
    for name in NOT_COUNTED:
        assert by_name[name].atomics == 0, name
        assert by_name[name].instructions >= N, name  # it ran, and was counted as code
    assert costs.atomics == sum(COUNTED.values())


def test_every_function_is_entered_once_and_the_groups_are_the_totals(costs) -> None:
    """A function's calls are the executions of its first instruction while collecting:
    each of these ran once (callgrind's own call counts would say the same here, but count
    outside the collected region too); main was entered before collection began."""
    by_name = {f.name: f for f in costs.functions}
    for name in (*COUNTED, *NOT_COUNTED):
        assert by_name[name].calls == 1, name
    assert by_name["main"].calls == 0
    groups = costs.groups()
    assert sum(g.instructions for g in groups) == costs.instructions
    assert sum(g.atomics for g in groups) == costs.atomics
