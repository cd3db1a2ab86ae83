/* Reset and fault handling of the Cortex-M firmware image, and the few C library hooks
 * newlib needs (heap growth, program exit), over Arm semihosting: QEMU's -semihosting
 * prints what the image writes and ends with the image's exit status. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "semihost.h"

extern uint32_t __bss_start__, __bss_end__, __stack_top__;
extern char __heap_start__, __heap_end__;
int main(void);
void reset_handler(void);

static void fault_handler(void) {
  sh_write0("{\"error\": \"fault: the CPU took an exception\"}\n");
  sh_exit(1);
}

/* Initial stack pointer, then the handlers: reset, NMI, HardFault, MemManage, BusFault,
 * UsageFault. Interrupts are never enabled, so no other vector is taken. */
__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(&__stack_top__),
    reset_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
};

void reset_handler(void) {
  /* QEMU zero-fills .bss when loading the ELF; a real board would not. */
  memset(&__bss_start__, 0, (size_t)((char *)&__bss_end__ - (char *)&__bss_start__));
  sh_exit(main() == 0 ? 0 : 1);
}

/* newlib's malloc grows its arena here, between .bss and the stack. */
void *_sbrk(ptrdiff_t increment) {
  static char *brk = &__heap_start__;
  if (increment > &__heap_end__ - brk || increment < &__heap_start__ - brk) {
    errno = ENOMEM;
    return (void *)-1;
  }
  char *old = brk;
  brk += increment;
  return old;
}

void _exit(int status) { sh_exit(status); }
