/*
 * Instruction kernels whose cycles the cores' manuals state, for the cycle model's tests
 * (tests/long/test_cycle_model.py builds this with the firmware images' start-up code and runs
 * it under the model). Each kernel comes in two lengths, REPS and 2 x REPS repetitions of the
 * same instructions, called the same way: the difference of their two windows is REPS
 * repetitions in steady state, free of the call, the prologue and the return.
 *
 * A store to fw_window opens the model's window, the next closes it (cycles_plugin.c).
 */
#include <stdint.h>
#include <stdio.h>

#include "semihost.h"

#define REPS 16

volatile uint32_t fw_window = 1; /* in .data: the start-up code zeroes .bss with word stores */
void fw_systick_handler(void) {}

/* Words the loads read, each holding the array's address: a dependent chain, an LDM that
 * reloads its base with itself, and loads whose results serve as the next bases. */
uint32_t words[64] __attribute__((aligned(16)));

#define STR2(x) #x
#define STR(x) STR2(x)

/* A kernel: a function of one argument (r0) whose body repeats `body` n times. */
#define KERNEL(name, n, prologue, body, epilogue)                                      \
  __asm__(".syntax unified\n.text\n.balign 16\n.global " #name "\n.thumb_func\n" #name \
          ":\n" prologue "\n.rept " STR(n) "\n" body "\n.endr\n" epilogue "\nbx lr\n");

#define PAIR(name, prologue, body, epilogue)           \
  KERNEL(name##_1, REPS, prologue, body, epilogue)     \
  KERNEL(name##_2, 2 * REPS, prologue, body, epilogue) \
  void name##_1(uintptr_t);                            \
  void name##_2(uintptr_t);

/* A loop of `n` turns (r0): the taken branch and, aligned to a 16-byte line, a body of three
 * lines (22 single-cycle 16-bit instructions, SUBS and BNE: 48 bytes), for the flash kernels. */
#define LOOP(name, body_reps)                                                               \
  __asm__(".syntax unified\n.text\n.balign 16\n.global " #name "\n.thumb_func\n" #name      \
          ":\n1:\n.rept " #body_reps "\nadds r1, #1\n.endr\nsubs r0, #1\nbne 1b\nbx lr\n"); \
  void name(uintptr_t);

/* The taken-branch loop: SUBS and BNE only (both in one line). */
LOOP(loop_branch, 0)
/* The flash loop: three 16-byte lines per turn. */
LOOP(loop_lines, 22)

/* Two independent data operations: dual-issued on the M7. */
PAIR(alu_pair, "", "adds r1, #1\nadds r2, #1", "")

/* A dependent load chain: each LDR's address is the previous LDR's result. */
PAIR(chain, "", "ldr r0, [r0]", "")

/* LDM of 8 registers, its base reloaded with the same address (words[0] = &words[0]). */
#if defined(__ARM_ARCH_6M__)
PAIR(ldm8, "push {r4-r7}", "ldm r0, {r0-r7}", "pop {r4-r7}")
#else
PAIR(ldm8, "push {r4-r8}", "ldm r0, {r1-r8}", "pop {r4-r8}")
#endif

#if !defined(__ARM_ARCH_6M__)
/* The ARMv7-M TRM's load/store pipelining examples, each group closed by a MOVS that nothing
 * pipelines with (TRM "Load/store timings"): "LDR R0,[R1]; LDR R1,[R2]: normally three cycles
 * total", "LDR R0,[R1,R2]; STR R0,[R3,#20]: normally three", "LDR R0,[R1,R2]; STR R1,[R3,R2]:
 * normally three", "LDR R0,[R1,R5]; LDR R1,[R2]; LDR R2,[R3,#4]: normally four". Every base
 * register points at `words`, every offset register holds 0. */
#define POINTERS "push {r4-r5}\nmov r1, r0\nmov r2, r0\nmov r3, r0\nmovs r5, #0\n"
PAIR(trm_ldr_ldr, POINTERS, "ldr r0, [r1]\nldr r1, [r2]\nmovs r4, #0", "pop {r4-r5}")
PAIR(trm_ldr_str_imm, POINTERS "movs r2, #0", "ldr r0, [r1, r2]\nstr r0, [r3, #20]\nmovs r4, #0",
     "pop {r4-r5}")
PAIR(trm_ldr_str_reg, POINTERS "movs r2, #0", "ldr r0, [r1, r2]\nstr r1, [r3, r2]\nmovs r4, #0",
     "pop {r4-r5}")
PAIR(trm_ldr3, POINTERS, "ldr r0, [r1, r5]\nldr r1, [r2]\nldr r2, [r3, #4]\nmovs r4, #0",
     "pop {r4-r5}")
/* Long multiplies: short operands (16 bits) and long ones (32 bits). */
PAIR(umull_short, "push {r4}\nmovw r0, #0x1234\nmovw r1, #0x5678", "umull r2, r3, r0, r1",
     "pop {r4}")
PAIR(umull_long, "push {r4}\nmvn r0, #0x12\nmvn r1, #0x34", "umull r2, r3, r0, r1", "pop {r4}")
PAIR(umlal_long, "push {r4}\nmvn r0, #0x12\nmvn r1, #0x34", "umlal r2, r3, r0, r1", "pop {r4}")
#endif

typedef void (*kernel)(uintptr_t);
/* A kernel once outside the window (the accelerator's caches and the branch predictors warm,
 * as in a steady state), then inside it, from the same call site. */
__attribute__((noinline)) static void window(kernel k, uintptr_t arg) {
  for (volatile int turn = 0; turn < 2; turn++) { /* volatile: one call site, not unrolled */
    if (turn) fw_window = 0;
    k(arg);
  }
  fw_window = 0;
}

int main(void) {
  static char out[512];
  for (unsigned i = 0; i < sizeof words / sizeof words[0]; i++)
    words[i] = (uint32_t)(uintptr_t)words;
  uintptr_t base = (uintptr_t)words;
  /* The order of the windows, which the test reads (names, then each kernel's two lengths). */
  window(loop_branch, 100);
  window(loop_branch, 200);
  window(loop_lines, 100);
  window(loop_lines, 200);
  window(alu_pair_1, 0);
  window(alu_pair_2, 0);
  window(chain_1, base);
  window(chain_2, base);
  window(ldm8_1, base);
  window(ldm8_2, base);
#if !defined(__ARM_ARCH_6M__)
  window(trm_ldr_ldr_1, base);
  window(trm_ldr_ldr_2, base);
  window(trm_ldr_str_imm_1, base);
  window(trm_ldr_str_imm_2, base);
  window(trm_ldr_str_reg_1, base);
  window(trm_ldr_str_reg_2, base);
  window(trm_ldr3_1, base);
  window(trm_ldr3_2, base);
  window(umull_short_1, 0);
  window(umull_short_2, 0);
  window(umull_long_1, 0);
  window(umull_long_2, 0);
  window(umlal_long_1, 0);
  window(umlal_long_2, 0);
  snprintf(out, sizeof out,
           "{\"reps\": %d, \"turns\": 100, \"kernels\": [\"loop_branch\", \"loop_lines\", "
           "\"alu_pair\", \"chain\", \"ldm8\", \"trm_ldr_ldr\", \"trm_ldr_str_imm\", "
           "\"trm_ldr_str_reg\", "
           "\"trm_ldr3\", \"umull_short\", \"umull_long\", \"umlal_long\"]}\n",
           REPS);
#else
  snprintf(out, sizeof out,
           "{\"reps\": %d, \"turns\": 100, \"kernels\": [\"loop_branch\", \"loop_lines\", "
           "\"alu_pair\", \"chain\", \"ldm8\"]}\n",
           REPS);
#endif
  sh_write0(out);
  return 0;
}
