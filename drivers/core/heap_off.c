/*
 * The timing driver's heap module: no accounting at all. malloc and free are glibc's own,
 * so that no bookkeeping (usable-size lookups, a lock, a hash probe) runs inside a timed
 * region; the side tag is still set around library calls (one store), and every heap
 * figure reads as "not measured". Heap figures come from tlsbench-driver-heap, the same
 * sources linked with heap.c, run as a separate process.
 */
#include <string.h>

#include "tlsbench/measure.h"

const int tb_heap_accounting = 0;
_Thread_local tb_side tb_heap_current_side = TB_SIDE_HARNESS;

void tb_heap_get(tb_side side, tb_heap_counters *out) {
  (void)side;
  memset(out, 0, sizeof(*out));
}

void tb_heap_reset_peak(tb_side side) { (void)side; }
