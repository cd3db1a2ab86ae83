/* Reset and trap handling of the RISC-V firmware image (QEMU's virt board, -bios none, in
 * machine mode), and the C library hooks picolibc needs: its thread pointer (errno is
 * thread-local in picolibc) and program exit, over semihosting. The image's sources are
 * otherwise those of the Cortex-M image (drivers/embedded/cortexm). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "semihost.h"

extern char __zero_start__[], __zero_end__[], __tbss_start__[], __tbss_end__[];
extern char __tls_base[];
int main(void);
void fw_reset(void);
void fw_fault_handler(void);

/* Any trap (illegal instruction, access fault, misaligned access QEMU refuses) ends the run:
 * the image takes no interrupt. mtvec's direct mode needs 4-byte alignment. */
__attribute__((aligned(4))) void fw_fault_handler(void) {
  sh_write0("{\"error\": \"fault: the CPU took a trap\"}\n");
  sh_exit(1);
}

/* The board's reset vector jumps to the start of RAM, where the linker script puts this
 * (section .init): the global pointer (for the linker's gp-relative relaxation, not itself
 * relaxed), the stack, the trap vector, then C. */
__attribute__((naked, section(".init"), used)) void _start(void) {
  __asm__ volatile(
      ".option push\n\t.option norelax\n\tla gp, __global_pointer$\n\t.option pop\n\t"
      "la sp, __stack_top__\n\t"
      "la t0, fw_fault_handler\n\t"
      ".option push\n\t.option arch, +zicsr\n\tcsrw mtvec, t0\n\t.option pop\n\t"
      "j fw_reset");
}

void fw_reset(void) {
  /* QEMU loads .data and .tdata in place; the zero-initialised sections (.harness, .bss, and
   * the thread-local .tbss) are cleared here. The thread pointer addresses the TLS block
   * (RISC-V's variant I: .tdata at tp + 0, .tbss after it). */
  memset(__zero_start__, 0, (size_t)(__zero_end__ - __zero_start__));
  memset(__tbss_start__, 0, (size_t)(__tbss_end__ - __tbss_start__));
  __asm__ volatile("mv tp, %0" ::"r"(__tls_base));
  sh_exit(main() == 0 ? 0 : 1);
}

void _exit(int status) { sh_exit(status); }

/* picolibc leaves stdin, stdout and stderr to the application. A library's stray print
 * (mbedTLS's platform layer links printf) reaches QEMU's output, outside the JSON line. */
static int semihost_putc(char c, FILE *file) {
  (void)file;
  char text[2] = {c, '\0'};
  sh_write0(text);
  return (unsigned char)c;
}

static FILE semihost_stream = FDEV_SETUP_STREAM(semihost_putc, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &semihost_stream;
__strong_reference(stdin, stdout);
__strong_reference(stdin, stderr);
