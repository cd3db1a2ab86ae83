/*
 * Measuring: heap accounting per side, clocks, summaries. Core only; adapters never
 * include this header (they measure nothing).
 */
#ifndef TLSBENCH_MEASURE_H
#define TLSBENCH_MEASURE_H

#include <stddef.h>
#include <stdint.h>

/* Who is charged for an allocation: the side whose library call is running. */
typedef enum tb_side {
  TB_SIDE_HARNESS = 0, /* the driver's own work: never charged to a library */
  TB_SIDE_GLOBAL = 1,  /* library-wide initialisation (global_init) */
  TB_SIDE_CLIENT = 2,
  TB_SIDE_SERVER = 3,
  TB_SIDES = 4,
} tb_side;

/* Bytes as requested from malloc and friends, and the same with the allocator's usable
 * size (what the allocator really sets aside, minus its own headers). */
typedef struct tb_heap_counters {
  uint64_t live;        /* requested bytes currently allocated */
  uint64_t peak;        /* highest `live` since the last tb_heap_reset_peak */
  uint64_t live_usable; /* the same measured with malloc_usable_size */
  uint64_t peak_usable;
  uint64_t allocs; /* number of successful allocations (realloc to a new size counts) */
  uint64_t frees;
} tb_heap_counters;

/* The side charged now. Set around every library call, so inline: the harness's cost is
 * part of every figure. */
extern _Thread_local tb_side tb_heap_current_side;

/* Sets the side charged from now on; returns the previous one (to restore it). The barrier:
 * the compiler knows malloc, calloc and free as builtins that read no variable of the
 * program, so without it gcc -O2 drops a side set just before one of them and restored just
 * after, and the block is charged to the side that was running (heap.c's wrapper reads the
 * side). Around a library call it costs nothing: the call is opaque anyway. */
static inline tb_side tb_heap_set_side(tb_side side) {
  tb_side previous = tb_heap_current_side;
  __asm__ volatile("" ::: "memory");
  tb_heap_current_side = side;
  __asm__ volatile("" ::: "memory");
  return previous;
}
/* 1 in tlsbench-driver-heap (heap.c wraps malloc), 0 in tlsbench-driver (heap_off.c: no
 * accounting in the allocation path; heap figures are not measured there). */
extern const int tb_heap_accounting;

/* Stack high-water per side (stack.c): while measuring (heap driver only), every call made
 * for a side is bracketed by tb_stack_enter/leave, which paint the stack below the caller
 * and find how deep the call went. tb_stack_measure(1) starts a measurement (zeroing the
 * marks), tb_stack_measure(0) ends it; tb_stack_high_water reads a side's mark in bytes
 * (including the frames of tlsbench's call wrapper, a few hundred bytes). */
extern int tb_stack_active;
void tb_stack_enter(tb_side side);
void tb_stack_leave(tb_side side);
void tb_stack_measure(int on);
uint64_t tb_stack_high_water(tb_side side);

/* Counters of one side, or of the whole process (all sides) with TB_SIDES. */
void tb_heap_get(tb_side side, tb_heap_counters *out);
/* Makes peak = live (for one side, or all with TB_SIDES). */
void tb_heap_reset_peak(tb_side side);

/* Lock calls per side (locks.c): the driver defines the pthread lock entry points, so that
 * every caller (the libraries, static or shared) reaches them, and forwards each to glibc.
 * While a thread counts (tb_locks_count(1), --locks), each call is added to the side the
 * thread is serving; a lock found held (its trylock failed first) is "contended". */
typedef enum tb_lock_kind {
  TB_LOCK_MUTEX = 0,  /* pthread_mutex_lock and _trylock */
  TB_LOCK_READ = 1,   /* pthread_rwlock_rdlock and _tryrdlock */
  TB_LOCK_WRITE = 2,  /* pthread_rwlock_wrlock and _trywrlock */
  TB_LOCK_ONCE = 3,   /* pthread_once (no contention counted) */
  TB_LOCK_WAIT = 4,   /* pthread_cond_wait and _timedwait (each one waited) */
  TB_LOCK_SIGNAL = 5, /* pthread_cond_signal and _broadcast */
  TB_LOCK_KINDS = 6,
} tb_lock_kind;

typedef struct tb_lock_counts {
  uint64_t calls[TB_LOCK_KINDS];
  uint64_t contended[TB_LOCK_KINDS];
} tb_lock_counts;

/* 1 where the driver defines the wrappers (x86-64 glibc), 0 elsewhere (--locks refused). */
extern const int tb_locks_available;
/* Starts (1) or stops (0) counting in the calling thread. */
void tb_locks_count(int on);
/* Adds the calling thread's counts to `sides` (TB_SIDES entries) and zeroes them. */
void tb_locks_take(tb_lock_counts *sides);
/* Adds one set of per-side counts (TB_SIDES entries) to another. */
void tb_locks_add(tb_lock_counts *to, const tb_lock_counts *from);
/* The names of the kinds, for the output ("mutex", "rwlock_read", ...). */
extern const char *const tb_lock_kind_names[TB_LOCK_KINDS];

/* Deterministic mode: under valgrind's callgrind (started with --collect-atstart=no), only
 * the measured calls of the side named by $TLSBENCH_COLLECT (client, server or all) are
 * counted. tb_collect_measuring() marks the iterations that count (not the warm-up);
 * tb_collect() is called on entry to and exit from each measured library call. */
void tb_collect_init(void);
void tb_collect_measuring(int on);
void tb_collect_toggle(tb_side side);
extern int tb_collect_enabled; /* TLSBENCH_COLLECT is set */
static inline void tb_collect(tb_side side) {
  if (tb_collect_enabled) tb_collect_toggle(side);
}
const char *tb_collect_mode(void); /* NULL when not collecting */

/* Clocks. */
uint64_t tb_mono_ns(void);       /* CLOCK_MONOTONIC */
uint64_t tb_thread_cpu_ns(void); /* CLOCK_THREAD_CPUTIME_ID: CPU time of this thread */
double tb_tsc_hz(void);          /* time-stamp counter rate, calibrated once */
/* Cycles an empty timed region costs (two tb_tsc() reads back to back, the minimum of
 * many): subtracted from every TSC interval so that a figure is the code's own time. */
uint64_t tb_tsc_overhead(void);
/* Nanoseconds one thread-CPU-clock read adds to a timed call (median of back-to-back pairs),
 * subtracted from every per-call CPU interval. */
uint64_t tb_thread_cpu_overhead(void);
/* The smallest increment of the TSC, in cycles: the resolution of one TSC sample. */
uint64_t tb_tsc_step(void);
/* An interval net of the timer's own cost (never below zero). */
static inline uint64_t tb_tsc_net(uint64_t ticks) {
  uint64_t overhead = tb_tsc_overhead();
  return ticks > overhead ? ticks - overhead : 0;
}

/* The calibration workload (calibrate.c): its description, and its time in ns (median of
 * several rounds), measured before and after the point to expose machine drift. */
extern const char *const tb_calibration_workload;
double tb_calibration_ns(double tsc_hz);

/* Serialising read of the time-stamp counter (lfence keeps earlier work inside). */
static inline uint64_t tb_tsc(void) {
#if defined(__x86_64__) || defined(__i386__)
  uint32_t lo, hi;
  __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
  return ((uint64_t)hi << 32) | lo;
#else
  return tb_mono_ns();
#endif
}

/* Summary of samples: min, median, mean, p99 (nearest rank), max. */
typedef struct tb_summary {
  size_t n;
  double min, median, mean, p99, max;
} tb_summary;

void tb_summarize(const double *samples, size_t n, tb_summary *out);

#endif /* TLSBENCH_MEASURE_H */
