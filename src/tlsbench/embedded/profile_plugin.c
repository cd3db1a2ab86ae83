/*
 * A QEMU TCG plugin (QEMU 7.2's plugin API, version 1) that counts the instructions a
 * firmware image executes inside its measured handshake calls, per side and per instruction
 * address: what `tlsbench cortex-m --split` attributes to the image's functions
 * (profile.py beside it builds and runs it).
 *
 * Arguments (-plugin profile.so,arg=...):
 *   out=PATH     where the counts are written when QEMU exits
 *   open=ADDR    the entry of the measured call (fw_step): a window opens when it runs
 *   close=ADDR   a return address of that call in the caller (repeatable): the window closes
 *   order=SEQ    the side of each window in turn, c (client) or s (server): the image's loop
 *                alternates the sides until one is done, and its side argument is in a
 *                register this API version cannot read
 *
 * A translation block starts at every branch target, so the measured call's entry and its
 * return sites are block starts; every block is counted whole when it runs (with -icount,
 * QEMU retranslates a shorter block instead of leaving one half run). Output lines:
 *   windows N          windows opened (must equal the length of order)
 *   total SIDE COUNT   instructions in that side's windows
 *   tb SIDE RUNS ADDR... one translated block: how often it ran in SIDE's windows, and the
 *                      address of each of its instructions
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_CLOSE 16
#define SIDES 2

typedef struct block {
  uint64_t n;
  uint64_t runs[SIDES];
  int opens, closes;
  uint64_t *addrs;
  struct block *next;
} block;

static block *blocks;
static uint64_t open_at, close_at[MAX_CLOSE];
static int n_close;
static char order[4096];
static size_t n_order, windows;
static int in_window, side, overflow;
static uint64_t total[SIDES];
static char out_path[4096];

static void on_exec(unsigned int vcpu, void *udata) {
  block *b = udata;
  (void)vcpu;
  if (b->closes) in_window = 0;
  if (b->opens) {
    if (windows >= n_order) {
      overflow = 1;
      in_window = 0;
    } else {
      side = order[windows] == 's';
      in_window = 1;
    }
    windows++;
  }
  if (in_window) {
    b->runs[side]++;
    total[side] += b->n;
  }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  block *b = calloc(1, sizeof *b);
  if (b == NULL) abort();
  b->n = qemu_plugin_tb_n_insns(tb);
  b->addrs = calloc(b->n ? b->n : 1, sizeof *b->addrs);
  if (b->addrs == NULL) abort();
  for (size_t i = 0; i < b->n; i++)
    b->addrs[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
  uint64_t start = qemu_plugin_tb_vaddr(tb);
  b->opens = start == open_at;
  for (int i = 0; i < n_close; i++)
    if (start == close_at[i]) b->closes = 1;
  b->next = blocks;
  blocks = b;
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void on_quit(qemu_plugin_id_t id, void *p) {
  (void)id;
  (void)p;
  FILE *f = fopen(out_path, "w");
  if (f == NULL) return; /* the reader reports the missing file */
  fprintf(f, "windows %zu%s\n", windows, overflow ? " overflow" : "");
  for (int s = 0; s < SIDES; s++) fprintf(f, "total %d %" PRIu64 "\n", s, total[s]);
  for (block *b = blocks; b != NULL; b = b->next)
    for (int s = 0; s < SIDES; s++) {
      if (b->runs[s] == 0) continue;
      fprintf(f, "tb %d %" PRIu64, s, b->runs[s]);
      for (uint64_t i = 0; i < b->n; i++) fprintf(f, " %" PRIx64, b->addrs[i]);
      fputc('\n', f);
    }
  fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
  (void)info;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "out=", 4) == 0 && strlen(a + 4) < sizeof out_path) {
      strcpy(out_path, a + 4);
    } else if (strncmp(a, "open=", 5) == 0) {
      open_at = strtoull(a + 5, NULL, 16);
    } else if (strncmp(a, "close=", 6) == 0 && n_close < MAX_CLOSE) {
      close_at[n_close++] = strtoull(a + 6, NULL, 16);
    } else if (strncmp(a, "order=", 6) == 0 && strlen(a + 6) < sizeof order &&
               strspn(a + 6, "cs") == strlen(a + 6)) {
      strcpy(order, a + 6);
      n_order = strlen(order);
    } else {
      fprintf(stderr, "profile plugin: bad argument %s\n", a);
      return -1;
    }
  }
  if (!out_path[0] || !open_at || !n_close || !n_order) {
    fprintf(stderr, "profile plugin: out=, open=, close= and order= are required\n");
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_quit, NULL);
  return 0;
}
