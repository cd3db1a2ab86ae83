/* handshake: full handshakes on fresh connections, both sides in this process. Per
 * iteration: each side's CPU time in its library calls and the wall time of the exchange;
 * in the heap driver, heap per side of the first (cold) and a second (warm) connection. */
#include "connection.h"
#include "scenario.h"

static const tb_option_id options[] = {TB_OPT_THREADS, TB_OPT_CONTEXTS, TB_OPT_LOCKS, TB_OPT_END};
static const tb_default defaults[] = {
    {TB_OPT_ITERATIONS, "100"}, {TB_OPT_WARMUP, "5"}, {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{"client_cpu_ns", "ns", NULL},
                                        {"server_cpu_ns", "ns", NULL},
                                        {"wall_ns", "ns", NULL},
                                        {"handshakes_per_s", "1/s", NULL},
                                        {"thread_handshakes_per_s", "1/s", "--threads"},
                                        {"total_handshakes_per_s", "1/s", "--threads"},
                                        {NULL, NULL, NULL}};

/* One thread's iterations (threads.c): the only thread, or one of --threads. */
static int loop(tb_run *r) {
  tb_series *client = tb_series_get(r, "client_cpu_ns");
  tb_series *server = tb_series_get(r, "server_cpu_ns");
  tb_series *wall = tb_series_get(r, "wall_ns");
  tb_series *per_second = tb_series_get(r, "handshakes_per_s");
  tb_conn_pair conns;
  long i = 0;
  for (; i < r->opt->warmup + r->opt->iterations; i++) {
    uint64_t client_ns = 0, server_ns = 0;
    if (i == r->opt->warmup) tb_measured_begin(r);
    if (i > r->opt->warmup && tb_measured_stop(r)) break;
    tb_collect_measuring(i >= r->opt->warmup);
    uint64_t t0 = tb_mono_ns();
    int code = tb_connect(r, NULL, &conns, &client_ns, &server_ns);
    tb_collect_measuring(0);
    uint64_t t1 = tb_mono_ns();
    if (code == TB_EXIT_OK) code = tb_check_negotiated(r, &conns, 0);
    tb_disconnect(r, &conns);
    if (code != TB_EXIT_OK) return code;
    if (i < r->opt->warmup) continue;
    if (tb_series_add(client, (double)client_ns) || tb_series_add(server, (double)server_ns) ||
        tb_series_add(wall, (double)(t1 - t0)) ||
        tb_series_add(per_second,
                      1e9 / (double)(client_ns + server_ns ? client_ns + server_ns : 1))) {
      return tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  tb_measured_end(r, i - r->opt->warmup);
  return TB_EXIT_OK;
}

static int run(tb_run *r, tb_json *j) {
  (void)j;
  int code = tb_setup_contexts(r, 0);
  if (code != TB_EXIT_OK) return code;
  tb_conn_pair conns;
  code = tb_first_connection(r, &conns, 0);
  tb_disconnect(r, &conns);
  if (code == TB_EXIT_OK && tb_heap_accounting) code = tb_warm_connection(r);
  if (code != TB_EXIT_OK) return code;
  return tb_run_threads(r, loop);
}

const tb_scenario tb_scenario_handshake = {
    .name = "handshake",
    .summary = "full handshakes on fresh connections, both sides in this process",
    .flags = TB_SC_TLS | TB_SC_ONE_PROCESS | TB_SC_TCP | TB_SC_HEAP | TB_SC_INSTRUCTIONS,
    .options = options,
    .defaults = defaults,
    .series = series,
    .check = tb_check_threads,
    .params = tb_write_thread_params,
    .run = run,
};
