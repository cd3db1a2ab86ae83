/*
 * The core of the firmware image (firmware.h), Cortex-M and RISC-V alike: reads the job
 * from the command line, sets up both sides through the library's adapter, pumps their
 * handshakes in lockstep over two in-memory pipes, reads back what was negotiated from the
 * library and from the wire, and prints one JSON line over semihosting.
 *
 * Arguments (QEMU -semihosting-config arg=...): the program name, then KEY=VALUE:
 *   tls=1.2|1.3  suite=IANA-NAME-WITH-DASHES  kx=ecdhe|rsa|psk|psk_dhe
 *   group=NAME (the client's only group; default: the library's)
 *   cert=rsa2048|ecdsa-p256|ml-dsa-44 (ML-DSA: TLS 1.3 only)
 *   chain=1|2  record=512|1024|2048|4096 (max_fragment_length the client asks for)
 * or mode=ops [batch=N]: no handshake, but each of the adapter's operations (fw_ops: the
 * library's own crypto API, one call per operation) run N times in one measured batch, and
 * a batch of an empty operation timed the same way (the loop's own cost, which the reader
 * subtracts): timer ticks, heap peak and allocations, and stack high-water per batch.
 *
 * Per side, around every library call made on that side's behalf:
 *  - instructions: QEMU runs with -icount shift=0 (one instruction = one nanosecond of
 *    virtual time); SysTick counts that virtual time at the board's CPU clock, its wraps
 *    counted by its interrupt (on RISC-V: minstret, one tick per instruction); the image
 *    calibrates instructions per tick against a loop of known length;
 *  - heap: calloc/malloc/realloc/free are wrapped (-Wl,--wrap) and charged to the side
 *    whose call is running (setup included: configuration, credentials, contexts); library-
 *    wide set-up is charged to "global"; peak of live bytes (requested sizes) and what is
 *    live at the end are reported;
 *  - stack: the stack below the caller is painted before the call and scanned after it.
 * The handshake is deterministic: the entropy is a fixed test stream and nothing reads a
 * clock. A one-role image (TLSBENCH_ROLE) links that side's set-up and handshake only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firmware.h"
#include "semihost.h"

/* Charged like a side: what no side's call allocates (library-wide set-up). */
#define FW_GLOBAL FW_SIDES

/* ---------------------------------------------------------------- deterministic entropy */
/* DETERMINISTIC TEST ENTROPY, FOR BENCHMARKING ONLY: the boards have no entropy source that
 * QEMU emulates, and a benchmark wants the same handshake on every run. A firmware that
 * shipped this would have no security at all. The state runs on from call to call, so that
 * client and server draw different streams. */
void fw_test_entropy(unsigned char *out, size_t len) {
  static uint32_t state = 0x2545F491u;
  for (size_t i = 0; i < len; i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    out[i] = (unsigned char)state;
  }
}

/* ---------------------------------------------------------------- virtual-time counter */
#if !defined(__riscv)
/* SysTick, on every M-profile core: a 24-bit down counter at the CPU clock; its interrupt
 * counts the wrap-arounds, so that a long call is timed whole. The handler's few
 * instructions are counted too, identically on every run. */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_ENABLE_TICKINT_CPUCLOCK 7u
#define SYST_MAX 0xFFFFFFu
static volatile uint32_t timer_wraps;

void fw_systick_handler(void) { timer_wraps++; }
#endif

/* ---------------------------------------------------------------- heap per side */
static int current = -1; /* the side whose library call is running, -1: none */
static size_t live[FW_SIDES + 1], peak[FW_SIDES + 1];
static uint32_t allocations[FW_SIDES + 1];

/* Every block carries its size and side ahead of it (8 bytes keep 8-byte alignment). */
typedef struct {
  uint32_t size;
  int32_t side;
} block_head;

void *__real_malloc(size_t);
void __real_free(void *);

void *__wrap_malloc(size_t size) {
  block_head *h = __real_malloc(sizeof *h + size);
  if (h == NULL) return NULL;
  h->size = (uint32_t)size;
  h->side = current;
  if (current >= 0) {
    live[current] += size;
    allocations[current]++;
    if (live[current] > peak[current]) peak[current] = live[current];
  }
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

/* ---------------------------------------------------------------- memory transport */
#define PIPE_SIZE 32768
typedef struct {
  unsigned char data[PIPE_SIZE];
  size_t head, tail;
} pipe_t;
/* pipes[s]: what side s reads (the other side writes it). */
static FW_HARNESS pipe_t pipes[FW_SIDES];

/* What the server sends before its records are encrypted, kept to read back from the wire
 * what it chose (version, suite, group, whether it took the PSK). */
static FW_HARNESS unsigned char server_flight[8192];
static size_t server_flight_len;

size_t fw_send(enum fw_side side, const unsigned char *buf, size_t len) {
  pipe_t *p = &pipes[side == FW_CLIENT ? FW_SERVER : FW_CLIENT];
  if (p->head == p->tail) p->head = p->tail = 0;
  if (len > PIPE_SIZE - p->tail) len = PIPE_SIZE - p->tail;
  memcpy(p->data + p->tail, buf, len);
  p->tail += len;
  if (side == FW_SERVER) {
    size_t room = sizeof server_flight - server_flight_len;
    size_t n = len < room ? len : room;
    memcpy(server_flight + server_flight_len, buf, n);
    server_flight_len += n;
  }
  return len;
}

size_t fw_recv(enum fw_side side, unsigned char *buf, size_t len) {
  pipe_t *p = &pipes[side];
  size_t have = p->tail - p->head;
  if (len > have) len = have;
  memcpy(buf, p->data + p->head, len);
  p->head += len;
  return len;
}

/* ---------------------------------------------------------------- groups */
static const struct {
  const char *name;
  uint16_t id;
} groups[] = {/* RFC 8422 / 7027 / 8446 code points */
              {"secp256r1", 0x0017},       {"secp384r1", 0x0018}, {"secp521r1", 0x0019},
              {"brainpoolP256r1", 0x001a}, {"x25519", 0x001d},    {"x448", 0x001e},
              {"ffdhe2048", 0x0100},       {"ffdhe3072", 0x0101}};

const char *fw_group_name(uint16_t id) {
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
    if (groups[i].id == id) return groups[i].name;
  return NULL;
}

const char *fw_unsupported_reason;

/* ---------------------------------------------------------------- one run */
#if defined(TLSBENCH_ROLE)
/* A one-role image is linked for its sizes, never run: one side's set-up and handshake, so
 * that the linker keeps what that side reaches and nothing else. */
int main(void) {
  fw_job job = {13, "", FW_KX_ECDHE, 0, FW_CERT_RSA2048, 1, 0};
  int error = 0;
  if (fw_init() != 0 || fw_setup((enum fw_side)TLSBENCH_ROLE, &job) != 0) return 1;
  while (fw_step((enum fw_side)TLSBENCH_ROLE, &error) == FW_AGAIN) {
  }
  return error != 0;
}
#else
/* ---------------------------------------------------------------- virtual-time counter, cont. */
#if defined(__riscv)
/* RISC-V: the 64-bit minstret counter, which QEMU 7.2 derives from its instruction counter
 * under -icount (one tick per instruction: the calibration below reads 1000 per 1000). No
 * interrupt is needed; the high word is read twice so that a carry between the reads is
 * seen. Zicsr is named here: GCC 12's -march=rv32imc leaves it out. */
static void timer_start(void) {}

static uint64_t timer_now(void) {
  uint32_t high, low, again;
  do {
    __asm__ volatile(
        ".option push\n\t.option arch, +zicsr\n\tcsrr %0, minstreth\n\t"
        "csrr %1, minstret\n\tcsrr %2, minstreth\n\t.option pop"
        : "=r"(high), "=r"(low), "=r"(again));
  } while (high != again);
  return ((uint64_t)high << 32) | low;
}

/* Turns of exactly two instructions each (compressed or not, two instructions). */
#define COUNT_LOOP(n) __asm__ volatile("1: addi %0, %0, -1\n\tbnez %0, 1b" : "+r"(n))
#else
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

#define COUNT_LOOP(n) \
  __asm__ volatile(".syntax unified\n1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc")
#endif

#define CALIBRATION_LOOPS 4000000u /* two instructions each: 8 M instructions */

/* Instructions per 1000 timer ticks: a loop of exactly 2 instructions per turn. */
static uint64_t calibrate(void) {
  uint32_t n = CALIBRATION_LOOPS;
  uint64_t t0 = timer_now();
  COUNT_LOOP(n);
  uint64_t ticks = timer_now() - t0;
  return ticks == 0 ? 0 : (2ull * CALIBRATION_LOOPS * 1000ull + ticks / 2) / ticks;
}

/* ---------------------------------------------------------------- stack per side */
extern uint32_t __stack_limit__;
#define STACK_PATTERN 0xA5A5A5A5u
#define STACK_MARGIN 64 /* bytes below the caller's frame left unpainted */
static uint32_t *painted_top;
static size_t stack_high[FW_SIDES + 1];

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
static uint64_t ticks[FW_SIDES + 1];
static uint32_t calls[FW_SIDES + 1];

#define MEASURED(side, expr, out)     \
  do {                                \
    stack_paint();                    \
    current = (side);                 \
    uint64_t t0_ = timer_now();       \
    (out) = (expr);                   \
    ticks[side] += timer_now() - t0_; \
    current = -1;                     \
    calls[side]++;                    \
    stack_scan(side);                 \
  } while (0)

/* ---------------------------------------------------------------- the wire */
/* What the server's plaintext handshake messages say: the ServerHello's version, suite,
 * TLS 1.3 key share and pre_shared_key, a HelloRetryRequest, and TLS 1.2's
 * ServerKeyExchange curve. */
typedef struct {
  unsigned version; /* 0x0303, 0x0304 (supported_versions) */
  unsigned suite;
  unsigned group; /* 0: none on the wire */
  int psk;        /* TLS 1.3: the server accepted the client's PSK */
  int hello_retry;
} wire_facts;

static const unsigned char hrr_random[32] = {
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C};

static unsigned be16(const unsigned char *p) { return ((unsigned)p[0] << 8) | p[1]; }

static void read_server_hello(const unsigned char *m, size_t len, wire_facts *w) {
  if (len < 38) return;
  w->version = be16(m);
  if (memcmp(m + 2, hrr_random, 32) == 0) w->hello_retry = 1;
  size_t at = 34 + 1 + m[34];
  if (at + 3 > len) return;
  w->suite = be16(m + at);
  at += 3; /* suite, compression */
  if (at + 2 > len) return;
  size_t end = at + 2 + be16(m + at);
  for (at += 2; at + 4 <= end && end <= len;) {
    unsigned type = be16(m + at), elen = be16(m + at + 2);
    const unsigned char *e = m + at + 4;
    if (type == 43 && elen >= 2) w->version = be16(e); /* supported_versions */
    if (type == 51 && elen >= 2) w->group = be16(e);   /* key_share */
    if (type == 41 && elen >= 2) w->psk = 1;           /* pre_shared_key */
    at += 4 + elen;
  }
}

static void read_server_key_exchange(const unsigned char *m, size_t len, const fw_job *job,
                                     wire_facts *w) {
  size_t at = 0;
  if (job->kx == FW_KX_PSK_DHE) { /* the PSK identity hint comes first (RFC 5489) */
    if (len < 2) return;
    at = 2 + be16(m);
  }
  if (job->kx == FW_KX_PSK) return; /* a hint only */
  if (at + 3 <= len && m[at] == 3 /* named_curve */) w->group = be16(m + at + 1);
}

/* The handshake messages of the server's first plaintext records, reassembled across
 * records (a small max_fragment_length splits them). */
static wire_facts read_wire(const fw_job *job) {
  static FW_HARNESS unsigned char messages[8192];
  size_t n = 0;
  wire_facts w = {0, 0, 0, 0, 0};
  for (size_t at = 0; at + 5 <= server_flight_len;) {
    size_t len = be16(server_flight + at + 3);
    if (server_flight[at] != 22 || at + 5 + len > server_flight_len) break;
    if (n + len > sizeof messages) break;
    memcpy(messages + n, server_flight + at + 5, len);
    n += len;
    at += 5 + len;
  }
  for (size_t i = 0; i + 4 <= n;) {
    size_t mlen =
        ((size_t)messages[i + 1] << 16) | ((size_t)messages[i + 2] << 8) | messages[i + 3];
    if (i + 4 + mlen > n) break;
    if (messages[i] == 2) read_server_hello(messages + i + 4, mlen, &w);
    if (messages[i] == 12) read_server_key_exchange(messages + i + 4, mlen, job, &w);
    i += 4 + mlen;
  }
  return w;
}

/* ---------------------------------------------------------------- the job */
static const char *const side_names[FW_SIDES + 1] = {"client", "server", "global"};
static FW_HARNESS char out[4096];

static int fail(const char *what, int error) {
  char reason[120] = "";
  if (error != 0 && error != FW_UNSUPPORTED && error != FW_NO_SUITE)
    fw_error_text(error, reason, sizeof reason);
  for (char *c = reason; *c; c++)
    if (*c == '"' || *c == '\\') *c = '\'';
  if (error == FW_NO_SUITE) snprintf(reason, sizeof reason, "cipher suite not in this build");
  if (error == FW_UNSUPPORTED)
    snprintf(reason, sizeof reason, "%s",
             fw_unsupported_reason != NULL ? fw_unsupported_reason : "not in this build");
  snprintf(out, sizeof out, "{\"error\": \"%s: %d (-0x%04x) %s\"%s}\n", what, error,
           (unsigned)(error < 0 ? -error : error), reason,
           error == FW_UNSUPPORTED || error == FW_NO_SUITE ? ", \"unsupported\": true" : "");
  sh_write0(out);
  return 1;
}

static const char *const kx_names[] = {"ecdhe", "rsa", "psk", "psk_dhe"};
static const char *const cert_names[FW_CERTS] = {"rsa2048", "ecdsa-p256", "ml-dsa-44"};

static int lookup(const char *value, const char *const *names, int count) {
  for (int i = 0; i < count; i++)
    if (strcmp(value, names[i]) == 0) return i;
  return -1;
}

static uint16_t group_id(const char *name) {
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
    if (strcmp(groups[i].name, name) == 0) return groups[i].id;
  return 0;
}

/* The job from KEY=VALUE arguments: 0, or 1 after printing what is wrong. */
static int parse_job(int argc, char **argv, fw_job *job) {
  *job = (fw_job){12, NULL, FW_KX_ECDHE, 0, FW_CERT_RSA2048, 1, 0};
  for (int i = 1; i < argc; i++) {
    char *value = strchr(argv[i], '=');
    if (value == NULL) return fail("arguments are KEY=VALUE", 0);
    *value++ = '\0';
    const char *key = argv[i];
    int n;
    if (strcmp(key, "tls") == 0 && (strcmp(value, "1.2") == 0 || strcmp(value, "1.3") == 0))
      job->tls = value[2] == '2' ? 12 : 13;
    else if (strcmp(key, "suite") == 0)
      job->suite = value;
    else if (strcmp(key, "kx") == 0 && (n = lookup(value, kx_names, 4)) >= 0)
      job->kx = (enum fw_kx)n;
    else if (strcmp(key, "group") == 0 && group_id(value) != 0)
      job->group = group_id(value);
    else if (strcmp(key, "cert") == 0 && (n = lookup(value, cert_names, FW_CERTS)) >= 0)
      job->cert = (enum fw_cert)n;
    else if (strcmp(key, "chain") == 0 && (value[0] == '1' || value[0] == '2') && !value[1])
      job->chain = value[0] - '0';
    else if (strcmp(key, "record") == 0 && (n = atoi(value)) >= 512 && n <= 4096 && !(n & (n - 1)))
      job->record = (unsigned)n;
    else {
      snprintf(out, sizeof out, "{\"error\": \"bad argument %s=%s\"}\n", key, value);
      sh_write0(out);
      return 1;
    }
  }
  if (job->suite == NULL) return fail("no suite= argument", 0);
  return 0;
}

#define MAX_ARGS 10

/* The arguments QEMU passes, split at spaces. */
static int read_args(char **argv) {
  static FW_HARNESS char cmdline[512];
  int argc = 0;
  if (sh_cmdline(cmdline, sizeof cmdline) != 0) return 0;
  for (char *tok = strtok(cmdline, " "); tok && argc < MAX_ARGS; tok = strtok(NULL, " "))
    argv[argc++] = tok;
  return argc;
}

static int print_result(uint64_t per_kticks, const uint64_t *hs_ticks, const wire_facts *w) {
  fw_negotiated got[FW_SIDES];
  for (int side = FW_CLIENT; side < FW_SIDES; side++) fw_read_back((enum fw_side)side, &got[side]);
  const char *group = w->group ? fw_group_name((uint16_t)w->group) : "none";
  int n = snprintf(out, sizeof out,
                   "{\"library\": \"%s\", \"library_version\": \"%s\", "
                   "\"instructions_per_1000_ticks\": %llu, \"wire\": {\"version\": %u, "
                   "\"suite\": %u, \"group\": \"%s\", \"psk\": %s, \"hello_retry\": %s}",
                   fw_library, fw_library_version, (unsigned long long)per_kticks, w->version,
                   w->suite, group ? group : "unknown", w->psk ? "true" : "false",
                   w->hello_retry ? "true" : "false");
  for (int side = FW_CLIENT; side <= FW_GLOBAL; side++) {
    n += snprintf(out + n, sizeof out - (size_t)n,
                  ", \"%s\": {\"handshake_timer_ticks\": %llu, \"setup_timer_ticks\": %llu, "
                  "\"handshake_calls\": %lu, \"heap_peak\": %lu, \"heap_live\": %lu, "
                  "\"allocations\": %lu, \"stack_high_water\": %lu",
                  side_names[side], (unsigned long long)hs_ticks[side],
                  (unsigned long long)(ticks[side] - hs_ticks[side]), (unsigned long)calls[side],
                  (unsigned long)peak[side], (unsigned long)live[side],
                  (unsigned long)allocations[side], (unsigned long)stack_high[side]);
    if (side < FW_SIDES)
      n += snprintf(out + n, sizeof out - (size_t)n,
                    ", \"version\": \"%s\", \"suite\": \"%s\", \"verified\": %d, \"record\": %u",
                    got[side].version, got[side].suite, got[side].verified, got[side].record);
    n += snprintf(out + n, sizeof out - (size_t)n, "}");
  }
  snprintf(out + n, sizeof out - (size_t)n, "}\n");
  sh_write0(out);
  return 0;
}

/* ---------------------------------------------------------------- operations (mode=ops) */
#define OPS_SLOT FW_CLIENT /* the counters an operation's batch is charged to, reset per batch */
#define MAX_BATCH 64

static int op_nothing(void) { return 0; }

/* The measured loop: the same for every operation and for the empty one. */
__attribute__((noinline)) static int op_batch(int (*run)(void), unsigned batch) {
  for (unsigned i = 0; i < batch; i++) {
    int ret = run();
    if (ret != 0) return ret;
  }
  return 0;
}

/* One batch of `run`, its figures appended to out at *n: 0, or the library's error. */
static int measure_op(const char *name, int (*run)(void), unsigned batch, size_t *n) {
  live[OPS_SLOT] = peak[OPS_SLOT] = 0;
  allocations[OPS_SLOT] = 0;
  stack_high[OPS_SLOT] = 0;
  ticks[OPS_SLOT] = 0;
  int ret;
  MEASURED(OPS_SLOT, op_batch(run, batch), ret);
  if (ret != 0) return ret;
  *n += (size_t)snprintf(out + *n, sizeof out - *n,
                         "{\"name\": \"%s\", \"ticks\": %llu, \"heap_peak\": %lu, "
                         "\"allocations\": %lu, \"stack_high_water\": %lu}",
                         name, (unsigned long long)ticks[OPS_SLOT], (unsigned long)peak[OPS_SLOT],
                         (unsigned long)allocations[OPS_SLOT], (unsigned long)stack_high[OPS_SLOT]);
  return 0;
}

static int run_ops(int argc, char **argv) {
  unsigned batch = 4;
  for (int i = 2; i < argc; i++) {
    int n = strncmp(argv[i], "batch=", 6) == 0 ? atoi(argv[i] + 6) : 0;
    if (n < 1 || n > MAX_BATCH) {
      snprintf(out, sizeof out, "{\"error\": \"bad argument %s (mode=ops takes batch=1..%d)\"}\n",
               argv[i], MAX_BATCH);
      sh_write0(out);
      return 1;
    }
    batch = (unsigned)n;
  }
  timer_start();
  uint64_t per_kticks = calibrate();
  if (per_kticks == 0) return fail("the timer does not count (is -icount on?)", 0);
  int ret;
  MEASURED(FW_GLOBAL, fw_init(), ret);
  if (ret != 0) return fail("library initialisation", ret);
  size_t n =
      (size_t)snprintf(out, sizeof out,
                       "{\"library\": \"%s\", \"library_version\": \"%s\", "
                       "\"mode\": \"ops\", \"instructions_per_1000_ticks\": %llu, "
                       "\"batch\": %u, \"loop\": ",
                       fw_library, fw_library_version, (unsigned long long)per_kticks, batch);
  if (measure_op("loop", op_nothing, batch, &n) != 0) return fail("the empty batch", 0);
  n += (size_t)snprintf(out + n, sizeof out - n, ", \"ops\": [");
  size_t first = n;
  for (size_t i = 0; i < fw_op_count; i++) {
    const fw_op *op = &fw_ops[i];
    const char *sep = n > first ? ", " : "";
    if (op->missing != NULL) {
      n +=
          (size_t)snprintf(out + n, sizeof out - n, "%s{\"name\": \"%s\", \"unsupported\": \"%s\"}",
                           sep, op->name, op->missing);
      continue;
    }
    if ((ret = op->prepare()) != 0) {
      char what[64];
      snprintf(what, sizeof what, "preparing %s", op->name);
      return fail(what, ret);
    }
    if (n > first) n += (size_t)snprintf(out + n, sizeof out - n, ", ");
    if ((ret = measure_op(op->name, op->run, batch, &n)) != 0) {
      char what[64];
      snprintf(what, sizeof what, "operation %s", op->name);
      return fail(what, ret);
    }
    op->release();
  }
  if (n + 4 > sizeof out) return fail("the operations' output is too long", 0);
  snprintf(out + n, sizeof out - n, "]}\n");
  sh_write0(out);
  return 0;
}

int main(void) {
  char *argv[MAX_ARGS] = {0};
  int argc = read_args(argv);
  fw_job job;
  if (argc < 1) return fail("no command line", 0);
  if (argc > 1 && strcmp(argv[1], "mode=ops") == 0) return run_ops(argc, argv);
  if (parse_job(argc, argv, &job) != 0) return 1;

  timer_start();
  uint64_t per_kticks = calibrate();
  if (per_kticks == 0) return fail("the timer does not count (is -icount on?)", 0);

  int ret;
  MEASURED(FW_GLOBAL, fw_init(), ret);
  if (ret != 0) return fail("library initialisation", ret);
  for (int side = FW_CLIENT; side < FW_SIDES; side++) {
    MEASURED(side, fw_setup((enum fw_side)side, &job), ret);
    if (ret != 0) return fail(side == FW_CLIENT ? "client set-up" : "server set-up", ret);
  }
  /* The handshake's own instructions: what setup cost is counted apart. */
  uint64_t setup_ticks[FW_SIDES + 1] = {ticks[FW_CLIENT], ticks[FW_SERVER], ticks[FW_GLOBAL]};
  calls[FW_CLIENT] = calls[FW_SERVER] = 0;

  int done[FW_SIDES] = {0, 0};
  for (int turn = 0; !(done[FW_CLIENT] && done[FW_SERVER]); turn++) {
    if (turn > 200) return fail("handshake does not progress", 0);
    for (int side = FW_CLIENT; side < FW_SIDES; side++) {
      if (done[side]) continue;
      int error = 0;
      MEASURED(side, fw_step((enum fw_side)side, &error), ret);
      if (ret == FW_DONE)
        done[side] = 1;
      else if (ret == FW_FAILED)
        return fail(side == FW_CLIENT ? "client handshake" : "server handshake", error);
    }
  }
  uint64_t hs_ticks[FW_SIDES + 1] = {ticks[FW_CLIENT] - setup_ticks[FW_CLIENT],
                                     ticks[FW_SERVER] - setup_ticks[FW_SERVER], 0};
  wire_facts wire = read_wire(&job);
  return print_result(per_kticks, hs_ticks, &wire);
}
#endif
