/* connections: --connections N connections held open at once in this process, each after
 * its full handshake and a small exchange of application data (--payload bytes each way,
 * so that the buffers a library allocates on first use are counted). What each connection
 * costs:
 *  - heap driver, per side: live heap (requested, and the allocator's usable size) and
 *    peak heap, from just before the first connection to after the Nth, divided by N;
 *  - timing driver (no accounting table in memory): the process's resident set
 *    (/proc/self/statm) and its high-water mark (VmHWM, reset just before the first
 *    connection) above the resident set before it, divided by N.
 *
 * Connections are made one after another, client and server pumped in lockstep over the
 * run's one memory pair as in the other one-process scenarios (an open connection, idle,
 * keeps that transport but never uses it again); so at most one handshake is in progress
 * at a time and the figures are those of N established connections, the peak of one more
 * handshake on top. Every connection is checked against the request, and every byte.
 * One process measures one N: points at several N give the figure against N. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connection.h"
#include "scenario.h"

static const tb_option_id options[] = {TB_OPT_CONNECTIONS, TB_OPT_PAYLOAD, TB_OPT_END};
static const tb_default defaults[] = {{TB_OPT_CONNECTIONS, "100"},
                                      {TB_OPT_PAYLOAD, "1024"},
                                      {TB_OPT_ITERATIONS, "1"},
                                      {TB_OPT_WARMUP, "0"},
                                      {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{"client_heap_per_connection", "B", "heap driver"},
                                        {"server_heap_per_connection", "B", "heap driver"},
                                        {"client_usable_per_connection", "B", "heap driver"},
                                        {"server_usable_per_connection", "B", "heap driver"},
                                        {"client_peak_per_connection", "B", "heap driver"},
                                        {"server_peak_per_connection", "B", "heap driver"},
                                        {"rss_per_connection", "B", "timing driver"},
                                        {"rss_peak_per_connection", "B", "timing driver"},
                                        {NULL, NULL, NULL}};

/* One measurement per process: the process is the statistical unit, and a second round in
 * the same process would start from the first's heap. */
static int check(tb_options *o) {
  if (o->iterations != 1 || o->warmup != 0) {
    return tb_usage_error(
        "connections measures --connections N once per process: --iterations and --warmup "
        "do not apply (run it again for another sample)");
  }
  return 0;
}

static void params(tb_json *j, const tb_options *o) {
  tb_json_u64(j, "connections", (uint64_t)o->connections);
}

/* ------------------------------------------------------------------------- memory */

/* Reads a small /proc file into `buf` with plain system calls: nothing allocated. */
static int read_proc(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return 0;
}

/* Resident set size in bytes (/proc/self/statm's second field, in pages); 0 if unknown. */
static uint64_t rss_bytes(void) {
  char buf[256];
  if (read_proc("/proc/self/statm", buf, sizeof(buf)) != 0) return 0;
  char *end = NULL;
  (void)strtoull(buf, &end, 10);
  unsigned long long pages = strtoull(end, NULL, 10);
  return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The resident set's high-water mark in bytes (VmHWM in /proc/self/status); 0 if unknown. */
static uint64_t rss_peak_bytes(void) {
  char buf[4096];
  if (read_proc("/proc/self/status", buf, sizeof(buf)) != 0) return 0;
  const char *line = strstr(buf, "VmHWM:");
  return line != NULL ? strtoull(line + 6, NULL, 10) * 1024 : 0;
}

/* Makes the high-water mark the current resident set (Linux's clear_refs "5"). */
static int reset_rss_peak(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, "5", 1);
  close(fd);
  return n == 1 ? 0 : -1;
}

/* One side's heap before the first connection and after the Nth. */
typedef struct side_heap {
  tb_heap_counters before, after;
} side_heap;

typedef struct held {
  long n;
  side_heap client, server;
  uint64_t rss_before, rss_after, rss_peak; /* bytes; 0: not measured */
} held;

/* ------------------------------------------------------------------------- the run */

/* Client to server and back, --payload bytes each way, checked byte by byte. */
static int exchange(tb_run *r, tb_conn_pair *conns, unsigned char *data, unsigned char *scratch,
                    long i) {
  size_t len = r->opt->payload;
  tb_fill_pattern(data, len, (uint64_t)i);
  int code = tb_transfer(r, conns, 1, data, len, scratch, NULL, NULL, NULL, NULL);
  if (code != TB_EXIT_OK) return code;
  tb_fill_pattern(data, len, (uint64_t)i + 1);
  return tb_transfer(r, conns, 0, data, len, scratch, NULL, NULL, NULL, NULL);
}

/* Opens the N connections into `pairs`, each checked and used; `h` gets the figures. */
static int hold(tb_run *r, tb_conn_pair *pairs, unsigned char *data, unsigned char *scratch,
                held *h) {
  int peak_reset = 0;
  tb_heap_get(TB_SIDE_CLIENT, &h->client.before);
  tb_heap_get(TB_SIDE_SERVER, &h->server.before);
  if (!tb_heap_accounting) {
    h->rss_before = rss_bytes();
    peak_reset = reset_rss_peak() == 0;
    if (!peak_reset) tb_warn(r, "cannot reset the peak RSS: no rss_peak_per_connection");
  }
  /* The first one as the handshake scenario measures a cold connection ("heap" in the
   * output), which also starts the sides' peaks here. */
  int code = tb_first_connection(r, &pairs[0], 0);
  if (code == TB_EXIT_OK) code = exchange(r, &pairs[0], data, scratch, 0);
  for (long i = 1; i < h->n && code == TB_EXIT_OK; i++) {
    code = tb_connect(r, NULL, &pairs[i], NULL, NULL);
    if (code == TB_EXIT_OK) code = tb_check_negotiated(r, &pairs[i], 0);
    if (code == TB_EXIT_OK) code = exchange(r, &pairs[i], data, scratch, i);
  }
  if (code != TB_EXIT_OK) return code;
  tb_heap_get(TB_SIDE_CLIENT, &h->client.after);
  tb_heap_get(TB_SIDE_SERVER, &h->server.after);
  if (!tb_heap_accounting) {
    h->rss_after = rss_bytes();
    h->rss_peak = peak_reset ? rss_peak_bytes() : 0;
  }
  return TB_EXIT_OK;
}

/* Bytes above `base` per connection (below zero if the connections gave memory back). */
static double per_connection(uint64_t value, uint64_t base, long n) {
  return ((double)value - (double)base) / (double)n;
}

static int emit(tb_run *r, const held *h) {
  const char *names[2][3] = {
      {"client_heap_per_connection", "client_usable_per_connection", "client_peak_per_connection"},
      {"server_heap_per_connection", "server_usable_per_connection", "server_peak_per_connection"}};
  const side_heap *sides[2] = {&h->client, &h->server};
  int failed = 0;
  for (int s = 0; s < 2 && tb_heap_accounting; s++) {
    const tb_heap_counters *b = &sides[s]->before, *a = &sides[s]->after;
    failed |= tb_series_add(tb_series_get(r, names[s][0]), per_connection(a->live, b->live, h->n));
    failed |= tb_series_add(tb_series_get(r, names[s][1]),
                            per_connection(a->live_usable, b->live_usable, h->n));
    failed |= tb_series_add(tb_series_get(r, names[s][2]), per_connection(a->peak, b->live, h->n));
  }
  if (!tb_heap_accounting && h->rss_before && h->rss_after) {
    failed |= tb_series_add(tb_series_get(r, "rss_per_connection"),
                            per_connection(h->rss_after, h->rss_before, h->n));
  }
  if (!tb_heap_accounting && h->rss_before && h->rss_peak) {
    failed |= tb_series_add(tb_series_get(r, "rss_peak_per_connection"),
                            per_connection(h->rss_peak, h->rss_before, h->n));
  }
  return failed ? tb_fail_stage(r, TB_EXIT_ERROR, "samples") : TB_EXIT_OK;
}

static void write_side(tb_json *j, const char *key, const side_heap *s) {
  tb_json_object(j, key);
  tb_json_u64(j, "before", s->before.live);
  tb_json_u64(j, "after", s->after.live);
  tb_json_u64(j, "peak", s->after.peak);
  tb_json_u64(j, "before_usable", s->before.live_usable);
  tb_json_u64(j, "after_usable", s->after.live_usable);
  tb_json_u64(j, "peak_usable", s->after.peak_usable);
  /* Blocks the N connections hold: each costs the allocator a header beyond its usable
   * size, which the resident set sees and the heap figures do not. */
  uint64_t blocks_before = s->before.allocs - s->before.frees;
  uint64_t blocks_after = s->after.allocs - s->after.frees;
  tb_json_i64(j, "blocks", (int64_t)(blocks_after - blocks_before));
  tb_json_object_end(j);
}

/* The totals behind the per-connection series. */
static void write_totals(tb_json *j, const held *h) {
  tb_json_object(j, "connections");
  tb_json_u64(j, "open", (uint64_t)h->n);
  if (tb_heap_accounting) {
    write_side(j, "client", &h->client);
    write_side(j, "server", &h->server);
    tb_json_null(j, "rss");
  } else {
    tb_json_null(j, "client");
    tb_json_null(j, "server");
    tb_json_object(j, "rss");
    tb_json_u64(j, "before", h->rss_before);
    tb_json_u64(j, "after", h->rss_after);
    if (h->rss_peak) {
      tb_json_u64(j, "peak", h->rss_peak);
    } else {
      tb_json_null(j, "peak");
    }
    tb_json_object_end(j);
  }
  tb_json_object_end(j);
}

static int run(tb_run *r, tb_json *j) {
  int code = tb_setup_contexts(r, 0);
  if (code != TB_EXIT_OK) return code;
  held h = {.n = r->opt->connections};
  /* The harness's memory is all allocated (and touched) before the first measurement. */
  size_t len = r->opt->payload;
  tb_conn_pair *pairs = (tb_conn_pair *)tb_harness_alloc((size_t)h.n * sizeof(tb_conn_pair));
  unsigned char *data = tb_harness_alloc(len), *scratch = tb_harness_alloc(len);
  if (pairs == NULL || data == NULL || scratch == NULL) {
    code = tb_fail_stage(r, TB_EXIT_ERROR, "buffers");
  } else {
    memset(pairs, 0, (size_t)h.n * sizeof(tb_conn_pair));
    memset(data, 0, len);
    memset(scratch, 0, len);
    code = hold(r, pairs, data, scratch, &h);
  }
  if (code == TB_EXIT_OK) code = emit(r, &h);
  if (code == TB_EXIT_OK) write_totals(j, &h);
  for (long i = 0; pairs != NULL && i < h.n; i++) tb_disconnect(r, &pairs[i]);
  tb_harness_free(pairs);
  tb_harness_free(data);
  tb_harness_free(scratch);
  return code;
}

const tb_scenario tb_scenario_connections = {
    .name = "connections",
    .summary =
        "N connections held open after their handshakes and a small exchange: heap and "
        "resident memory per connection",
    .flags = TB_SC_TLS | TB_SC_ONE_PROCESS | TB_SC_HEAP,
    .options = options,
    .defaults = defaults,
    .series = series,
    .check = check,
    .params = params,
    .run = run,
};
