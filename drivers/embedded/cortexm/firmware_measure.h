/*
 * What every Cortex-M firmware image measures the same way, whatever its library: the
 * virtual-time counter and its calibration, heap per side (malloc and friends wrapped with
 * -Wl,--wrap), stack per side (painting), the MEASURED() call wrapper, and the in-memory
 * pipes between client and server. Included once by each firmware_<library>.c, after its
 * `enum side` and the C headers (stdint, stdlib, string).
 */
#ifndef TLSBENCH_FIRMWARE_MEASURE_H
#define TLSBENCH_FIRMWARE_MEASURE_H

/* ---------------------------------------------------------------- virtual-time counter */
/* CMSDK APB timer 0 of the MPS2 boards: a 32-bit down counter at the system clock. */
#define TIMER0_CTRL (*(volatile uint32_t *)0x40000000u)
#define TIMER0_VALUE (*(volatile uint32_t *)0x40000004u)
#define TIMER0_RELOAD (*(volatile uint32_t *)0x40000008u)

static void timer_start(void) {
  TIMER0_CTRL = 0;
  TIMER0_RELOAD = 0xFFFFFFFFu;
  TIMER0_VALUE = 0xFFFFFFFFu;
  TIMER0_CTRL = 1; /* enable, no interrupt */
}

static inline uint32_t timer_now(void) { return 0xFFFFFFFFu - TIMER0_VALUE; }

#define CALIBRATION_LOOPS 4000000u /* two instructions each: 8 M instructions */

/* Instructions per 1000 timer ticks: a loop of exactly 2 instructions per turn. */
static uint64_t calibrate(void) {
  uint32_t n = CALIBRATION_LOOPS;
  uint32_t t0 = timer_now();
  __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
  uint32_t ticks = timer_now() - t0;
  return ticks == 0 ? 0 : (2ull * CALIBRATION_LOOPS * 1000ull + ticks / 2) / ticks;
}

/* ---------------------------------------------------------------- heap per side */
static int current = -1; /* the side whose library call is running, -1: none */
static size_t live[SIDES], peak[SIDES];
static uint32_t allocations[SIDES];

/* Every block carries its size and side ahead of it (8 bytes keep 8-byte alignment). */
typedef struct {
  uint32_t size;
  int32_t side;
} block_head;

void *__real_malloc(size_t);
void __real_free(void *);

static void charge(int side, size_t size) {
  if (side < 0) return;
  live[side] += size;
  allocations[side]++;
  if (live[side] > peak[side]) peak[side] = live[side];
}

void *__wrap_malloc(size_t size) {
  block_head *h = __real_malloc(sizeof *h + size);
  if (h == NULL) return NULL;
  h->size = (uint32_t)size;
  h->side = current;
  charge(current, size);
  return h + 1;
}

void __wrap_free(void *p) {
  if (p == NULL) return;
  block_head *h = (block_head *)p - 1;
  if (h->side >= 0) live[h->side] -= h->size;
  __real_free(h);
}

void *__wrap_calloc(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size) return NULL;
  void *p = __wrap_malloc(n * size);
  if (p != NULL) memset(p, 0, n * size);
  return p;
}

void *__wrap_realloc(void *p, size_t size) {
  if (p == NULL) return __wrap_malloc(size);
  void *q = __wrap_malloc(size);
  if (q == NULL) return NULL;
  size_t old = ((block_head *)p - 1)->size;
  memcpy(q, p, old < size ? old : size);
  __wrap_free(p);
  return q;
}

/* ---------------------------------------------------------------- stack per side */
extern uint32_t __stack_limit__;
#define STACK_PATTERN 0xA5A5A5A5u
#define STACK_MARGIN 64 /* bytes below the caller's frame left unpainted */
static uint32_t *painted_top;
static size_t stack_high[SIDES];

__attribute__((noinline)) static void stack_paint(void) {
  uint32_t *top = (uint32_t *)((char *)__builtin_frame_address(0) - STACK_MARGIN);
  for (volatile uint32_t *p = &__stack_limit__; p < top; p++) *p = STACK_PATTERN;
  painted_top = top;
}

__attribute__((noinline)) static void stack_scan(int side) {
  uint32_t *p = &__stack_limit__;
  while (p < painted_top && *p == STACK_PATTERN) p++;
  size_t used = (size_t)((char *)painted_top - (char *)p) + STACK_MARGIN;
  if (used > stack_high[side]) stack_high[side] = used;
}

/* ---------------------------------------------------------------- measured calls */
static uint64_t ticks[SIDES];
static uint32_t calls[SIDES];

#define MEASURED(side, expr, out)     \
  do {                                \
    stack_paint();                    \
    current = (side);                 \
    uint32_t t0_ = timer_now();       \
    (out) = (expr);                   \
    ticks[side] += timer_now() - t0_; \
    current = -1;                     \
    calls[side]++;                    \
    stack_scan(side);                 \
  } while (0)

/* ---------------------------------------------------------------- memory transport */
#define PIPE_SIZE 32768
typedef struct {
  unsigned char data[PIPE_SIZE];
  size_t head, tail;
} pipe_t;
static pipe_t to_server, to_client;

/* What the server sends before its ChangeCipherSpec, kept to read the group it chose. */
static unsigned char server_flight[8192];
static size_t server_flight_len;

/* One side's ends of the two pipes (the same context is set for both callbacks). */
typedef struct {
  pipe_t *in, *out;
} ends_t;
static ends_t client_ends = {&to_client, &to_server}, server_ends = {&to_server, &to_client};

#endif /* TLSBENCH_FIRMWARE_MEASURE_H */
