/*
 * One malloc + free pair in a timed region, as the libraries' per-record and per-handshake
 * allocations see it. Built twice (CMakeLists.txt): with heap.c (the heap driver's
 * accounting wrappers) and with heap_off.c (the timing driver: glibc alone), so that
 * bench/harness_overhead.py can show what the accounting would add to a timed region.
 * Prints: "<ns per pair, median of batches> <accounting 0|1>".
 */
#include <stdio.h>
#include <stdlib.h>

#include "tlsbench/measure.h"

#define BATCH 1000
#define BATCHES 2000

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(void) {
  static double per_pair[BATCHES];
  static void *volatile sink;
  double hz = tb_tsc_hz();
  tb_heap_set_side(TB_SIDE_CLIENT);
  for (int b = 0; b < BATCHES; b++) {
    uint64_t start = tb_tsc();
    for (int i = 0; i < BATCH; i++) {
      sink = malloc(64 + (size_t)(i & 7) * 16); /* a few size classes, as records use */
      free(sink);
    }
    per_pair[b] = (double)tb_tsc_net(tb_tsc() - start) / hz * 1e9 / BATCH;
  }
  qsort(per_pair, BATCHES, sizeof(double), compare);
  printf("%.2f %d\n", per_pair[BATCHES / 2], tb_heap_accounting);
  return 0;
}
