/* C unit test of the heap counters: a known allocation pattern, exact expected figures. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlsbench/measure.h"

static int failures;

#define EXPECT_EQ(what, got, want)                                                            \
  do {                                                                                        \
    unsigned long long g_ = (got), w_ = (want);                                               \
    if (g_ != w_) {                                                                           \
      fprintf(stderr, "%s:%d: %s = %llu, expected %llu\n", __FILE__, __LINE__, what, g_, w_); \
      failures++;                                                                             \
    }                                                                                         \
  } while (0)

int main(void) {
  tb_heap_counters c, before_process, p;
  tb_heap_get(TB_SIDES, &before_process);

  tb_heap_set_side(TB_SIDE_CLIENT);
  void *a = malloc(100);
  void *b = calloc(10, 20); /* 200 */
  tb_heap_set_side(TB_SIDE_HARNESS);
  tb_heap_get(TB_SIDE_CLIENT, &c);
  EXPECT_EQ("client live", c.live, 300);
  EXPECT_EQ("client peak", c.peak, 300);
  EXPECT_EQ("client allocs", c.allocs, 2);
  EXPECT_EQ("client usable >= live", c.live_usable >= 300, 1);
  EXPECT_EQ("usable", c.live_usable, malloc_usable_size(a) + malloc_usable_size(b));

  /* Freed by the harness, still credited to the client who allocated it. */
  free(a);
  tb_heap_get(TB_SIDE_CLIENT, &c);
  EXPECT_EQ("client live after free", c.live, 200);
  EXPECT_EQ("client peak after free", c.peak, 300);
  EXPECT_EQ("client frees", c.frees, 1);

  /* realloc charges the new size to the side that is running. */
  tb_heap_set_side(TB_SIDE_SERVER);
  b = realloc(b, 1000);
  void *d = NULL;
  if (posix_memalign(&d, 64, 500) != 0) return 1;
  void *e = aligned_alloc(128, 256);
  tb_heap_set_side(TB_SIDE_HARNESS);
  tb_heap_get(TB_SIDE_CLIENT, &c);
  EXPECT_EQ("client live after realloc", c.live, 0);
  tb_heap_get(TB_SIDE_SERVER, &c);
  EXPECT_EQ("server live", c.live, 1000 + 500 + 256);
  EXPECT_EQ("server peak", c.peak, 1756);
  EXPECT_EQ("server allocs", c.allocs, 3);
  EXPECT_EQ("alignment", ((unsigned long)d % 64) + ((unsigned long)e % 128), 0);

  /* The harness's own allocations are never charged to a side. */
  void *h = malloc(5000);
  tb_heap_get(TB_SIDE_SERVER, &c);
  EXPECT_EQ("server live unchanged by harness", c.live, 1756);
  tb_heap_get(TB_SIDE_HARNESS, &c);
  EXPECT_EQ("harness live includes 5000", c.live >= 5000, 1);

  tb_heap_reset_peak(TB_SIDE_SERVER);
  free(d);
  tb_heap_get(TB_SIDE_SERVER, &c);
  EXPECT_EQ("server peak after reset", c.peak, 1756);
  EXPECT_EQ("server live after free", c.live, 1256);

  /* Many blocks: the table keeps exact totals through collisions and deletions. */
  enum { N = 20000 };
  static void *blocks[N];
  tb_heap_set_side(TB_SIDE_CLIENT);
  for (int i = 0; i < N; i++) blocks[i] = malloc((size_t)(i % 97) + 1);
  tb_heap_set_side(TB_SIDE_HARNESS);
  unsigned long long expected = 0;
  for (int i = 0; i < N; i++) expected += (unsigned long long)(i % 97) + 1;
  tb_heap_get(TB_SIDE_CLIENT, &c);
  EXPECT_EQ("client live many", c.live, expected);
  for (int i = 0; i < N; i += 2) free(blocks[i]);
  for (int i = 0; i < N; i += 2) expected -= (unsigned long long)(i % 97) + 1;
  tb_heap_get(TB_SIDE_CLIENT, &c);
  EXPECT_EQ("client live after half freed", c.live, expected);
  for (int i = 1; i < N; i += 2) free(blocks[i]);
  tb_heap_get(TB_SIDE_CLIENT, &c);
  EXPECT_EQ("client live all freed", c.live, 0);

  /* A moving realloc holds old and new at once: the peak counts both. The blocker right
   * after the block keeps glibc from growing it in place. */
  tb_heap_reset_peak(TB_SIDE_CLIENT);
  tb_heap_set_side(TB_SIDE_CLIENT);
  void *grow = malloc(50000);
  void *blocker = malloc(60000);
  void *grown = realloc(grow, 100000);
  tb_heap_set_side(TB_SIDE_HARNESS);
  tb_heap_get(TB_SIDE_CLIENT, &c);
  EXPECT_EQ("realloc moved", grown != grow, 1);
  EXPECT_EQ("client live after moving realloc", c.live, 160000);
  EXPECT_EQ("client peak holds old and new", c.peak, 210000);
  free(grown);
  free(blocker);

  free(b);
  free(e);
  free(h);
  tb_heap_get(TB_SIDES, &p);
  EXPECT_EQ("process live back to start", p.live, before_process.live);

  if (failures == 0) printf("heap counters: all checks passed\n");
  return failures ? 1 : 0;
}
