/* records: the cost of one application record, written by the client (encrypt and frame)
 * and read by the server (decrypt), one record at a time and then in batches. */
#include <stdio.h>
#include <string.h>

#include "connection.h"
#include "scenario.h"

static const tb_option_id options[] = {TB_OPT_PAYLOAD, TB_OPT_END};
static const tb_default defaults[] = {{TB_OPT_ITERATIONS, "10000"},
                                      {TB_OPT_WARMUP, "1000"},
                                      {TB_OPT_PAYLOAD, "256"},
                                      {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{"write_ns", "ns", NULL},
                                        {"read_ns", "ns", NULL},
                                        {"write_allocs", "allocations", "heap driver"},
                                        {"read_allocs", "allocations", "heap driver"},
                                        {"write_batch_ns", "ns", NULL},
                                        {"read_batch_ns", "ns", NULL},
                                        {NULL, NULL, NULL}};

/* One record carries the whole payload: a larger one would be split. */
static int check(tb_options *o) {
  size_t record_limit = o->record_size ? o->record_size : TB_RECORD_SIZE_MAX;
  if (o->payload > record_limit) {
    return tb_usage_error(
        "--payload %zu does not fit one record of %zu bytes; records measures one record per "
        "write (use bulk for larger writes)",
        o->payload, record_limit);
  }
  return 0;
}

/* A series timed by TSC intervals, `per` of them averaged per sample: its values move in
 * steps of the TSC's step / per. */
static void tsc_series(tb_run *r, tb_series *s, int per) {
  if (s != NULL) s->resolution_ns = tb_ticks_to_ns(r, tb_tsc_step()) / per;
}

/* Records per batch: at most 64, and at most 64 KiB of payload so that a batch fits the
 * transport's buffers (a TCP socket's included) before the reader drains it. */
static int batch_records(size_t len) {
  size_t n = 65536 / (len ? len : 1);
  return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* `n` records written back to back in one timed region, then read back to back in another:
 * a batch's mean per record is not quantised by the TSC's step, as a single record's time
 * is. Every byte is compared after the reads (outside the timed region). */
static int record_batch(tb_run *r, tb_data_session *s, size_t len, int n, unsigned char *in,
                        uint64_t *send, uint64_t *recv) {
  uint64_t t0 = tb_tsc();
  for (int k = 0; k < n; k++) {
    for (size_t sent = 0; sent < len;) {
      size_t done = 0;
      tb_status st = TB_ON(TB_SIDE_CLIENT, r->ad->tls->write(s->conns.client, s->data + sent,
                                                             len - sent, &done, r->err));
      if ((st != TB_OK && st != TB_WANT_IO) || done == 0) {
        if (st == TB_OK || st == TB_WANT_IO) snprintf(r->err, TB_ERR_LEN, "transport full");
        return tb_fail_stage(r, TB_EXIT_HANDSHAKE, "batch write");
      }
      sent += done;
    }
  }
  uint64_t t1 = tb_tsc();
  size_t total = (size_t)n * len;
  for (size_t got = 0; got < total;) {
    size_t done = 0;
    tb_status st = TB_ON(TB_SIDE_SERVER,
                         r->ad->tls->read(s->conns.server, in + got, total - got, &done, r->err));
    if ((st != TB_OK && st != TB_WANT_IO) || done == 0) {
      if (st == TB_OK || st == TB_WANT_IO)
        snprintf(r->err, TB_ERR_LEN, "%zu of %zu batch bytes arrived", got, total);
      return tb_fail_stage(r, TB_EXIT_DATA, "batch read");
    }
    got += done;
  }
  uint64_t t2 = tb_tsc();
  for (int k = 0; k < n; k++) {
    if (memcmp(in + (size_t)k * len, s->data, len) != 0) {
      snprintf(r->err, TB_ERR_LEN, "record %d of a batch differs", k);
      return tb_fail_stage(r, TB_EXIT_DATA, "data check");
    }
  }
  *send = tb_tsc_net(t1 - t0);
  *recv = tb_tsc_net(t2 - t1);
  return TB_EXIT_OK;
}

static int run(tb_run *r, tb_json *j) {
  (void)j;
  size_t len = r->opt->payload;
  tb_data_session s;
  int code = tb_data_session_open(r, len, &s);
  tb_series *write_ns = tb_series_get(r, "write_ns");
  tb_series *read_ns = tb_series_get(r, "read_ns");
  tsc_series(r, write_ns, 1);
  tsc_series(r, read_ns, 1);
  /* Allocations per record are a heap figure: only the heap driver counts them. */
  tb_series *write_allocs = tb_heap_accounting ? tb_series_get(r, "write_allocs") : NULL;
  tb_series *read_allocs = tb_heap_accounting ? tb_series_get(r, "read_allocs") : NULL;
  for (long i = 0; i < r->opt->warmup + r->opt->iterations && code == TB_EXIT_OK; i++) {
    tb_fill_pattern(s.data, len, (uint64_t)i);
    uint64_t send = 0, recv = 0, send_allocs = 0, recv_allocs = 0;
    tb_collect_measuring(i >= r->opt->warmup);
    code = tb_transfer(r, &s.conns, 1, s.data, len, s.scratch, &send, &recv, &send_allocs,
                       &recv_allocs);
    tb_collect_measuring(0);
    if (code != TB_EXIT_OK || i < r->opt->warmup) continue;
    if (tb_series_add(write_ns, tb_ticks_to_ns(r, send)) ||
        tb_series_add(read_ns, tb_ticks_to_ns(r, recv)) ||
        (tb_heap_accounting && (tb_series_add(write_allocs, (double)send_allocs) ||
                                tb_series_add(read_allocs, (double)recv_allocs)))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  /* Then the same records in batches: the per-record mean, beside the single-record
   * distribution above (whose centre the TSC's step quantises for short records). */
  int n = batch_records(len);
  long batches = r->opt->iterations / n > 0 ? r->opt->iterations / n : 1;
  tb_series *write_batch = tb_series_get(r, "write_batch_ns");
  tb_series *read_batch = tb_series_get(r, "read_batch_ns");
  tsc_series(r, write_batch, n);
  tsc_series(r, read_batch, n);
  unsigned char *in = code == TB_EXIT_OK ? tb_harness_alloc((size_t)n * len) : NULL;
  if (code == TB_EXIT_OK && in == NULL) code = tb_fail_stage(r, TB_EXIT_ERROR, "buffers");
  for (long b = 0; b < batches && code == TB_EXIT_OK; b++) {
    uint64_t send = 0, recv = 0;
    code = record_batch(r, &s, len, n, in, &send, &recv);
    if (code == TB_EXIT_OK && (tb_series_add(write_batch, tb_ticks_to_ns(r, send) / n) ||
                               tb_series_add(read_batch, tb_ticks_to_ns(r, recv) / n))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  tb_harness_free(in);
  tb_data_session_close(r, &s);
  return code;
}

const tb_scenario tb_scenario_records = {
    .name = "records",
    .summary =
        "one application record of --payload bytes written (encrypted) by the client "
        "and read (decrypted) by the server, singly and in batches",
    .flags = TB_SC_TLS | TB_SC_ONE_PROCESS | TB_SC_TCP | TB_SC_HEAP | TB_SC_INSTRUCTIONS,
    .options = options,
    .defaults = defaults,
    .series = series,
    .check = check,
    .run = run,
};
