/*
 * Heap accounting by wrapping malloc itself.
 *
 * The driver executable defines malloc, free, calloc, realloc, posix_memalign,
 * aligned_alloc, memalign, valloc and pvalloc; the dynamic linker resolves every caller
 * (the libraries, static or shared, and libc itself) to these, which forward to glibc's
 * __libc_* entry points. Only wrapping malloc sees everything: allocator hooks are not
 * universal (GnuTLS ignores its own since 3.3).
 *
 * Each live block's requested size, usable size and charged side are kept in an
 * open-addressing table in mmap'd memory, so the accounting allocates nothing from the
 * heap it measures and block layout is the same as without the driver.
 *
 * Single-threaded by design (both sides are pumped in one thread); a spin lock keeps the
 * table consistent should a library start a thread anyway.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "tlsbench/measure.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* 2^22 slots: 4 million live blocks, 96 MiB of address space touched only as used. */
#define TABLE_BITS 22
#define TABLE_SLOTS (1u << TABLE_BITS)

typedef struct slot {
  uintptr_t ptr; /* 0 = empty */
  uint64_t size;
  uint32_t usable;
  uint32_t side;
} slot;

const int tb_heap_accounting = 1;

static slot *table;
static int table_failed;
static tb_heap_counters counters[TB_SIDES];
static tb_heap_counters process;
/* Per thread: a thread a library starts is charged to the harness, never to whichever side
 * the main thread happens to be serving. */
_Thread_local tb_side tb_heap_current_side = TB_SIDE_HARNESS;
static volatile int lock_word;

static void lock(void) {
  while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) {
  }
}
static void unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

static int table_ready(void) {
  if (table == NULL && !table_failed) {
    void *mem = mmap(NULL, sizeof(slot) * TABLE_SLOTS, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
      table_failed = 1;
    } else {
      table = mem;
    }
  }
  return table != NULL;
}

static uint32_t hash(uintptr_t p) {
  /* Fibonacci hashing of the pointer without its alignment bits. */
  return (uint32_t)(((uint64_t)(p >> 4) * 11400714819323198485ull) >> (64 - TABLE_BITS));
}

static void charge(tb_heap_counters *c, uint64_t size, uint64_t usable) {
  c->live += size;
  c->live_usable += usable;
  c->allocs++;
  if (c->live > c->peak) c->peak = c->live;
  if (c->live_usable > c->peak_usable) c->peak_usable = c->live_usable;
}

static void credit(tb_heap_counters *c, uint64_t size, uint64_t usable) {
  c->live -= size;
  c->live_usable -= usable;
  c->frees++;
}

static void record(void *p, size_t size) {
  if (p == NULL || !table_ready()) return;
  uint64_t usable = malloc_usable_size(p);
  lock();
  uint32_t i = hash((uintptr_t)p);
  while (table[i].ptr != 0) i = (i + 1) & (TABLE_SLOTS - 1);
  table[i] = (slot){(uintptr_t)p, size, (uint32_t)usable, (uint32_t)tb_heap_current_side};
  charge(&counters[tb_heap_current_side], size, usable);
  charge(&process, size, usable);
  unlock();
}

/* Removes a block; blocks allocated before the table existed are not known: ignored. */
static void forget(void *p) {
  if (p == NULL || table == NULL) return;
  lock();
  uint32_t i = hash((uintptr_t)p);
  while (table[i].ptr != 0 && table[i].ptr != (uintptr_t)p) i = (i + 1) & (TABLE_SLOTS - 1);
  if (table[i].ptr == 0) {
    unlock();
    return;
  }
  credit(&counters[table[i].side], table[i].size, table[i].usable);
  credit(&process, table[i].size, table[i].usable);
  /* Backward-shift deletion keeps probe chains intact without tombstones. */
  uint32_t hole = i;
  uint32_t j = i;
  for (;;) {
    j = (j + 1) & (TABLE_SLOTS - 1);
    if (table[j].ptr == 0) break;
    uint32_t home = hash(table[j].ptr);
    /* Move j into the hole unless its home lies cyclically in (hole, j]. */
    int home_between = (hole <= j) ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!home_between) {
      table[hole] = table[j];
      hole = j;
    }
  }
  table[hole].ptr = 0;
  unlock();
}

void *malloc(size_t size) {
  void *p = __libc_malloc(size);
  record(p, size);
  return p;
}

void free(void *p) {
  forget(p);
  __libc_free(p);
}

void *calloc(size_t n, size_t size) {
  void *p = __libc_calloc(n, size);
  record(p, n * size); /* __libc_calloc has checked the overflow */
  return p;
}

/* A moving realloc holds the old and the new block at once while it copies: the peak
 * must see both (live, which still holds the old block, plus the new size). */
static void transient(size_t size) {
  lock();
  tb_heap_counters *c = &counters[tb_heap_current_side];
  if (c->live + size > c->peak) c->peak = c->live + size;
  if (process.live + size > process.peak) process.peak = process.live + size;
  unlock();
}

void *realloc(void *old, size_t size) {
  if (old == NULL) return malloc(size);
  if (size == 0) {
    free(old);
    return NULL;
  }
  void *p = __libc_realloc(old, size);
  if (p != NULL) {
    if (p != old) transient(size);
    forget(old);
    record(p, size);
  }
  return p;
}

void *memalign(size_t alignment, size_t size) {
  void *p = __libc_memalign(alignment, size);
  record(p, size);
  return p;
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void *p = __libc_memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  record(p, size);
  *out = p;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }

void *valloc(size_t size) {
  void *p = __libc_valloc(size);
  record(p, size);
  return p;
}

void *pvalloc(size_t size) {
  void *p = __libc_pvalloc(size);
  record(p, size);
  return p;
}

void tb_heap_get(tb_side side, tb_heap_counters *out) {
  lock();
  *out = side == TB_SIDES ? process : counters[side];
  unlock();
}

void tb_heap_reset_peak(tb_side side) {
  lock();
  for (int s = 0; s < TB_SIDES; s++) {
    if (side == TB_SIDES || side == (tb_side)s) {
      counters[s].peak = counters[s].live;
      counters[s].peak_usable = counters[s].live_usable;
    }
  }
  if (side == TB_SIDES) {
    process.peak = process.live;
    process.peak_usable = process.live_usable;
  }
  unlock();
}
