/* A fixed calibration workload, timed before and after every point, so that `compare` can
 * tell a change of the code from a change of the machine's speed between two runs. */
#include <stdint.h>
#include <stdlib.h>

#include "tlsbench/measure.h"

#define CALIBRATION_STEPS 100000
#define CALIBRATION_ROUNDS 9

const char *const tb_calibration_workload = "xorshift64* chain, 100000 steps, median of 9";

/* A dependent chain of integer operations: no memory traffic, no library, no allocation, so
 * its time moves only with the CPU's speed (frequency, steal time, neighbours). */
static uint64_t chain(uint64_t x) {
  for (int i = 0; i < CALIBRATION_STEPS; i++) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    x *= 0x2545F4914F6CDD1DULL;
  }
  return x;
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

double tb_calibration_ns(double tsc_hz) {
  static volatile uint64_t sink = 88172645463325252ULL;
  uint64_t ticks[CALIBRATION_ROUNDS];
  for (int r = 0; r < CALIBRATION_ROUNDS; r++) {
    uint64_t t0 = tb_tsc();
    sink = chain(sink);
    ticks[r] = tb_tsc() - t0;
  }
  qsort(ticks, CALIBRATION_ROUNDS, sizeof(ticks[0]), by_value);
  return (double)ticks[CALIBRATION_ROUNDS / 2] * 1e9 / tsc_hz;
}
