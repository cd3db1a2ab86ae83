/* Arm semihosting (the debugger's channel, served by QEMU's -semihosting; RISC-V's is the
 * same protocol): text out, the command line in, and exit with a status. */
#ifndef TLSBENCH_SEMIHOST_H
#define TLSBENCH_SEMIHOST_H

#include <stddef.h>

void sh_write0(const char *text);
/* The arguments QEMU passes (-semihosting-config arg=...), space-separated, NUL-ended. */
int sh_cmdline(char *buf, size_t len);
__attribute__((noreturn)) void sh_exit(int status);

#endif
