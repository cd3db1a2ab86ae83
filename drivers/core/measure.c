/* Clocks and sample summaries. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlsbench/measure.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#endif
#endif

static int collect_client, collect_server, measuring;
int tb_collect_enabled;
static const char *collect_mode;

void tb_collect_init(void) {
  const char *mode = getenv("TLSBENCH_COLLECT");
  if (mode == NULL) return;
  collect_client = strcmp(mode, "client") == 0 || strcmp(mode, "all") == 0;
  collect_server = strcmp(mode, "server") == 0 || strcmp(mode, "all") == 0;
  if (collect_client || collect_server) {
    collect_mode = mode;
    tb_collect_enabled = 1;
  }
}

void tb_collect_measuring(int on) { measuring = on; }

const char *tb_collect_mode(void) { return collect_mode; }

void tb_collect_toggle(tb_side side) {
#ifdef HAVE_CALLGRIND
  if (measuring &&
      ((side == TB_SIDE_CLIENT && collect_client) || (side == TB_SIDE_SERVER && collect_server))) {
    CALLGRIND_TOGGLE_COLLECT;
  }
#else
  (void)side;
#endif
}

static uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tb_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
uint64_t tb_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

double tb_tsc_hz(void) {
  static double hz;
  if (hz == 0) {
    /* The median of five 20 ms windows against the monotonic clock. */
    double rates[5];
    for (int i = 0; i < 5; i++) {
      uint64_t t0 = tb_mono_ns(), c0 = tb_tsc();
      while (tb_mono_ns() - t0 < 20000000ull) {
      }
      uint64_t t1 = tb_mono_ns(), c1 = tb_tsc();
      rates[i] = (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
    }
    for (int i = 1; i < 5; i++) {
      for (int k = i; k > 0 && rates[k] < rates[k - 1]; k--) {
        double t = rates[k];
        rates[k] = rates[k - 1];
        rates[k - 1] = t;
      }
    }
    hz = rates[2];
  }
  return hz;
}

/* What one read of the thread CPU clock adds to a timed library call: the median of many
 * back-to-back pairs (the median, not the minimum: every call pays a typical read, and on a
 * virtual machine a read costs hundreds of ns). Subtracted from every per-call interval. */
uint64_t tb_thread_cpu_overhead(void) {
  static uint64_t overhead = UINT64_MAX;
  if (overhead == UINT64_MAX) {
    enum { N = 2001 };
    static uint64_t pairs[N];
    for (int i = 0; i < N; i++) {
      uint64_t t0 = tb_thread_cpu_ns();
      uint64_t t1 = tb_thread_cpu_ns();
      pairs[i] = t1 - t0;
    }
    /* Insertion sort of a small array: no allocation before the measurements. */
    for (int i = 1; i < N; i++) {
      uint64_t v = pairs[i];
      int k = i - 1;
      while (k >= 0 && pairs[k] > v) {
        pairs[k + 1] = pairs[k];
        k--;
      }
      pairs[k + 1] = v;
    }
    overhead = pairs[N / 2];
  }
  return overhead;
}

/* The smallest step the TSC advances by, in cycles: the resolution of one TSC sample. */
uint64_t tb_tsc_step(void) {
  static uint64_t step;
  if (step == 0) {
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < 100000 && least > 1; i++) {
      uint64_t t0 = tb_tsc(), t1;
      while ((t1 = tb_tsc()) == t0) {
      }
      if (t1 - t0 < least) least = t1 - t0;
    }
    step = least;
  }
  return step;
}

uint64_t tb_tsc_overhead(void) {
  static uint64_t overhead = UINT64_MAX;
  if (overhead == UINT64_MAX) {
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < 10000; i++) {
      uint64_t t0 = tb_tsc();
      uint64_t t1 = tb_tsc();
      if (t1 - t0 < least) least = t1 - t0;
    }
    overhead = least;
  }
  return overhead;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void tb_summarize(const double *samples, size_t n, tb_summary *out) {
  memset(out, 0, sizeof(*out));
  out->n = n;
  if (n == 0) return;
  double *sorted = malloc(n * sizeof(double));
  if (sorted == NULL) return;
  memcpy(sorted, samples, n * sizeof(double));
  qsort(sorted, n, sizeof(double), by_value);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += sorted[i];
  out->min = sorted[0];
  out->max = sorted[n - 1];
  out->mean = sum / (double)n;
  out->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  size_t rank = (size_t)ceil(0.99 * (double)n); /* nearest-rank percentile */
  out->p99 = sorted[(rank == 0 ? 1 : rank) - 1];
  free(sorted);
}
