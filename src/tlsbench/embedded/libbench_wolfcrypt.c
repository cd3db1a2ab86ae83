/* The port of wolfCrypt's own benchmark program (wolfcrypt/benchmark/benchmark.c of the
 * pinned archive) to tlsbench's Cortex-M firmware boards: what `tlsbench cortex-m
 * --library-bench` links with benchmark.c and the variant's own libwolfssl.a.
 *
 * benchmark.c asks its port for the time (WOLFSSL_USER_CURRTIME: `double current_time(int)`,
 * in seconds). Here that time is the emulated clock the firmware images count: QEMU runs with
 * -icount shift=0, one instruction per virtual nanosecond, and SysTick counts that clock; the
 * image calibrates instructions per tick against a loop of known length exactly as
 * drivers/embedded/cortexm/firmware_core.c does. One benchmark "second" is 10^6 instructions
 * (printed first, for the parser), so that the program's figures, printed to 3 decimals of
 * seconds and milliseconds, keep every instruction of an operation; they convert back to
 * instructions per operation in src/tlsbench/embedded/libbench.py. Its arguments come over
 * semihosting; what it prints goes out over semihosting as well.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "semihost.h"

int wolfcrypt_benchmark_main(int argc, char **argv);

/* SysTick: a 24-bit down counter at the CPU clock, its wraps counted by its interrupt (the
 * startup code's vector table names this handler). */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_ENABLE_TICKINT_CPUCLOCK 7u
#define SYST_MAX 0xFFFFFFu
static volatile uint32_t timer_wraps;

void fw_systick_handler(void) { timer_wraps++; }

static void timer_start(void) {
  SYST_RVR = SYST_MAX;
  SYST_CVR = 0;
  SYST_CSR = SYST_ENABLE_TICKINT_CPUCLOCK;
  while (SYST_CVR == 0) {
  } /* the first tick reloads the counter */
  __asm__ volatile("cpsie i" ::: "memory");
}

static uint64_t timer_now(void) {
  uint32_t wraps, value;
  do {
    wraps = timer_wraps;
    value = SYST_CVR;
  } while (wraps != timer_wraps);
  return ((uint64_t)wraps << 24) + (SYST_MAX - value);
}

#define CALIBRATION_LOOPS 4000000u /* two instructions each: 8 M instructions */

/* Instructions per 1000 timer ticks, from a loop of exactly 2 instructions per turn. */
static uint64_t calibrate(void) {
  uint32_t n = CALIBRATION_LOOPS;
  uint64_t t0 = timer_now();
  __asm__ volatile(".syntax unified\n1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
  uint64_t ticks = timer_now() - t0;
  return ticks == 0 ? 0 : (2ull * CALIBRATION_LOOPS * 1000ull + ticks / 2) / ticks;
}

static uint64_t per_kticks;

#define INSTRUCTIONS_PER_SECOND 1000000u

/* The benchmark's clock: instructions since start-up, in seconds of INSTRUCTIONS_PER_SECOND. */
double current_time(int reset) {
  (void)reset;
  return (double)(timer_now() * per_kticks / 1000u) / (double)INSTRUCTIONS_PER_SECOND;
}

/* The library's seed (CUSTOM_RAND_GENERATE_SEED in the firmware features): a fixed test
 * stream, as the firmware images' (benchmarking only, never secret). */
int tlsbench_test_seed(unsigned char *output, unsigned int size) {
  static uint32_t state = 0x2545F491u;
  for (unsigned int i = 0; i < size; i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    output[i] = (unsigned char)state;
  }
  return 0;
}

/* newlib's output, over semihosting (SYS_WRITE0 takes NUL-ended text). */
int _write(int fd, const char *data, int len) {
  char chunk[257];
  (void)fd;
  for (int done = 0; done < len;) {
    int n = len - done < 256 ? len - done : 256;
    memcpy(chunk, data + done, (size_t)n);
    chunk[n] = '\0';
    sh_write0(chunk);
    done += n;
  }
  return len;
}

#define MAX_ARGS 32

int main(void) {
  static char line[512];
  char *argv[MAX_ARGS + 1];
  int argc = 0;
  setvbuf(stdout, NULL, _IONBF, 0);
  if (sh_cmdline(line, sizeof line) != 0) line[0] = '\0';
  /* QEMU passes the program's name first (arg=benchmark), then the benchmark's switches. */
  for (char *p = strtok(line, " "); p != NULL && argc < MAX_ARGS; p = strtok(NULL, " "))
    argv[argc++] = p;
  argv[argc] = NULL;
  timer_start();
  per_kticks = calibrate();
  if (per_kticks == 0) {
    printf("tlsbench: error: the timer does not count (is -icount on?)\n");
    return 1;
  }
  printf("tlsbench: instructions_per_1000_ticks %lu\n", (unsigned long)per_kticks);
  printf("tlsbench: instructions_per_second %u\n", INSTRUCTIONS_PER_SECOND);
  int ret = wolfcrypt_benchmark_main(argc, argv);
  printf("tlsbench: benchmark returned %d\n", ret);
  return ret;
}
