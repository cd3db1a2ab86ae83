/* Reset and fault handling of the Cortex-M firmware image, and the few C library hooks
 * newlib needs (heap growth, program exit), over Arm semihosting: QEMU's -semihosting
 * prints what the image writes and ends with the image's exit status. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "semihost.h"

extern uint32_t __data_load__, __data_start__, __data_end__, __zero_start__, __zero_end__;
extern uint32_t __stack_top__;
extern char __heap_start__, __heap_end__;
int main(void);
void reset_handler(void);
void fw_systick_handler(void); /* firmware_core.c: counts the timer's wrap-arounds */

static void fault_handler(void) {
  sh_write0("{\"error\": \"fault: the CPU took an exception\"}\n");
  sh_exit(1);
}

/* Initial stack pointer, then the handlers: reset, NMI, HardFault, MemManage, BusFault,
 * UsageFault, SecureFault, four reserved, SVCall, DebugMonitor, reserved, PendSV, SysTick.
 * The SysTick interrupt is the only one ever enabled. */
__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(&__stack_top__),
    reset_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    0,
    0,
    0,
    fault_handler,
    fault_handler,
    0,
    fault_handler,
    fw_systick_handler,
};

#define SCB_CCR (*(volatile uint32_t *)0xE000ED14u)
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define CCR_UNALIGN_TRP (1u << 3)

void reset_handler(void) {
#if defined(__ARM_ARCH_6M__)
  /* ARMv6-M code (Cortex-M0) may run on a board whose CPU model is an M3 (QEMU 7.2 has no
   * M0 board with the RAM for both peers): trap unaligned accesses as an M0 would. */
  SCB_CCR |= CCR_UNALIGN_TRP;
#endif
#if defined(__ARM_FP)
  /* A hard-float build may keep values in FP registers: give the CPU its FPU (CP10, CP11). */
  SCB_CPACR |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  /* .data from its load address (flash on a board with flash; the same place otherwise),
   * then the zero-initialised sections (.harness and .bss). */
  if (&__data_start__ != &__data_load__)
    memcpy(&__data_start__, &__data_load__,
           (size_t)((char *)&__data_end__ - (char *)&__data_start__));
  memset(&__zero_start__, 0, (size_t)((char *)&__zero_end__ - (char *)&__zero_start__));
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
