#include "semihost.h"

#include <stdint.h>

enum { SYS_WRITE0 = 0x04, SYS_GET_CMDLINE = 0x15, SYS_EXIT = 0x18 };
/* SYS_EXIT reasons: QEMU exits with status 0 for the first, 1 for any other. */
enum { ADP_STOPPED_APPLICATION_EXIT = 0x20026, ADP_STOPPED_RUN_TIME_ERROR = 0x20023 };

#if defined(__riscv)
/* RISC-V semihosting: the same calls, trapped by an EBREAK between two marker instructions
 * (uncompressed, on one page: QEMU reads all three; 16-byte alignment keeps them on one). */
static uintptr_t sh_call(uintptr_t op, const void *arg) {
  register uintptr_t a0 __asm__("a0") = op;
  register const void *a1 __asm__("a1") = arg;
  __asm__ volatile(
      ".option push\n\t.option norvc\n\t.balign 16\n\t"
      "slli x0, x0, 0x1f\n\tebreak\n\tsrai x0, x0, 7\n\t.option pop"
      : "+r"(a0)
      : "r"(a1)
      : "memory");
  return a0;
}
#else
static uintptr_t sh_call(uintptr_t op, const void *arg) {
  register uintptr_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
#endif

void sh_write0(const char *text) { sh_call(SYS_WRITE0, text); }

int sh_cmdline(char *buf, size_t len) {
  uintptr_t block[2] = {(uintptr_t)buf, len};
  return sh_call(SYS_GET_CMDLINE, block) == 0 ? 0 : -1;
}

void sh_exit(int status) {
  sh_call(SYS_EXIT,
          (const void *)(status == 0 ? ADP_STOPPED_APPLICATION_EXIT : ADP_STOPPED_RUN_TIME_ERROR));
  for (;;) {
  }
}
