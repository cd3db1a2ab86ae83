/*
 * Stack high-water per side: how deep a library call's stack went, for firmware engineers
 * who budget stack as tightly as heap. Only the heap driver measures it (painting costs
 * far more than the calls being timed), and only around the calls of a measured connection.
 *
 * Before a call on behalf of a side, the region below the caller's stack pointer (a
 * safety margin past the x86-64 red zone) is painted with a pattern; after the call, the
 * lowest address whose byte changed is how deep the call went. The deepest call of a
 * connection is the side's high-water mark. A call whose frames wrote the pattern's own
 * value at its deepest byte would read a few bytes shallower: the figure is exact to the
 * byte only with that (unlikely) caveat.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tlsbench/measure.h"

#define STACK_DEPTH (256 * 1024) /* painted below the caller: deeper use is reported as this */
#define STACK_MARGIN 512         /* left untouched: the caller's frame and red zone */
#define STACK_PATTERN 0xA5

int tb_stack_active;
static uint64_t high_water[TB_SIDES];
static unsigned char *painted_top;

__attribute__((noinline)) void tb_stack_enter(tb_side side) {
  (void)side;
  /* This function's frame is just below the caller's (noinline): painting starts under it. */
  unsigned char *top = (unsigned char *)__builtin_frame_address(0) - STACK_MARGIN;
  /* Downwards from the caller, so that the stack mapping grows page by page (a first
   * touch far below it faults); volatile: the compiler must not drop stores to memory it
   * believes dead. */
  volatile unsigned char *p = top;
  for (size_t i = 1; i <= STACK_DEPTH; i++) p[-(ptrdiff_t)i] = STACK_PATTERN;
  painted_top = top;
}

__attribute__((noinline)) void tb_stack_leave(tb_side side) {
  if (painted_top == NULL) return;
  volatile unsigned char *p = painted_top - STACK_DEPTH;
  size_t i = 0;
  while (i < STACK_DEPTH && p[i] == STACK_PATTERN) i++;
  uint64_t used = (uint64_t)(STACK_DEPTH - i) + STACK_MARGIN;
  if (used > high_water[side]) high_water[side] = used;
  painted_top = NULL;
}

void tb_stack_measure(int on) {
  if (on) memset(high_water, 0, sizeof(high_water));
  tb_stack_active = on && tb_heap_accounting;
}

uint64_t tb_stack_high_water(tb_side side) { return high_water[side]; }
