/* bulk: record-layer throughput, --bytes of application data per iteration from client to
 * server in writes of --payload bytes (the largest records by default). */
#include "connection.h"
#include "scenario.h"

static const tb_option_id options[] = {TB_OPT_PAYLOAD, TB_OPT_BYTES, TB_OPT_END};
static const tb_default defaults[] = {{TB_OPT_ITERATIONS, "5"},
                                      {TB_OPT_WARMUP, "1"},
                                      {TB_OPT_PAYLOAD, "16384"},
                                      {TB_OPT_BYTES, "16777216"},
                                      {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {
    {"sender_MBps", "MB/s", NULL}, {"receiver_MBps", "MB/s", NULL}, {NULL, NULL, NULL}};

/* The largest records: with --record-size, writes of that size (not the 16384 default). */
static int check(tb_options *o) {
  if (!o->given[TB_OPT_PAYLOAD] && o->record_size) o->payload = o->record_size;
  return 0;
}

static int run(tb_run *r, tb_json *j) {
  (void)j;
  size_t chunk = r->opt->payload;
  tb_data_session s;
  int code = tb_data_session_open(r, chunk, &s);
  tb_series *sender = tb_series_get(r, "sender_MBps");
  tb_series *receiver = tb_series_get(r, "receiver_MBps");
  uint64_t record = 0;
  for (long i = 0; i < r->opt->warmup + r->opt->iterations && code == TB_EXIT_OK; i++) {
    uint64_t send = 0, recv = 0;
    tb_collect_measuring(i >= r->opt->warmup);
    for (uint64_t done = 0; done < r->opt->bytes && code == TB_EXIT_OK; done += chunk) {
      size_t len = r->opt->bytes - done < chunk ? (size_t)(r->opt->bytes - done) : chunk;
      tb_fill_pattern(s.data, len, record++);
      code = tb_transfer(r, &s.conns, 1, s.data, len, s.scratch, &send, &recv, NULL, NULL);
    }
    tb_collect_measuring(0);
    if (code != TB_EXIT_OK || i < r->opt->warmup) continue;
    double mb = (double)r->opt->bytes / 1e6;
    if (tb_series_add(sender, mb / (tb_ticks_to_ns(r, send) / 1e9)) ||
        tb_series_add(receiver, mb / (tb_ticks_to_ns(r, recv) / 1e9))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  tb_data_session_close(r, &s);
  return code;
}

const tb_scenario tb_scenario_bulk = {
    .name = "bulk",
    .summary =
        "record-layer throughput: --bytes of application data per iteration, sender "
        "and receiver timed apart",
    .flags = TB_SC_TLS | TB_SC_ONE_PROCESS | TB_SC_TCP | TB_SC_INSTRUCTIONS,
    .options = options,
    .defaults = defaults,
    .series = series,
    .check = check,
    .run = run,
};
