/* resume: resumed handshakes, each continuing with the newest session of the one before,
 * both sides in this process; checked to really resume every time. */
#include <string.h>

#include "connection.h"
#include "scenario.h"

static const tb_option_id options[] = {TB_OPT_THREADS, TB_OPT_CONTEXTS, TB_OPT_LOCKS, TB_OPT_END};
static const tb_default defaults[] = {
    {TB_OPT_ITERATIONS, "100"}, {TB_OPT_WARMUP, "5"}, {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{"client_cpu_ns", "ns", NULL},
                                        {"server_cpu_ns", "ns", NULL},
                                        {"wall_ns", "ns", NULL},
                                        {"thread_handshakes_per_s", "1/s", "--threads"},
                                        {"total_handshakes_per_s", "1/s", "--threads"},
                                        {NULL, NULL, NULL}};

/* After a handshake: one byte server -> client, so that a TLS 1.3 client has processed
 * the NewSessionTicket that follows the handshake, then the client's session. */
static int take_session(tb_run *r, tb_conn_pair *conns, void **session) {
  unsigned char one = 0x5a, got = 0;
  int code = tb_transfer(r, conns, 0, &one, 1, &got, NULL, NULL, NULL, NULL);
  if (code != TB_EXIT_OK) return code;
  tb_status st = TB_ON(TB_SIDE_CLIENT, r->ad->tls->session_get(conns->client, session, r->err));
  if (st == TB_UNSUPPORTED) return tb_fail_stage(r, TB_EXIT_UNSUPPORTED, "session");
  if (st != TB_OK) return tb_fail_stage(r, TB_EXIT_HANDSHAKE, "session");
  return TB_EXIT_OK;
}

/* The iterations from `session` on, each continuing with the newest session. */
static int resume_from(tb_run *r, void *session) {
  tb_series *client = tb_series_get(r, "client_cpu_ns");
  tb_series *server = tb_series_get(r, "server_cpu_ns");
  tb_series *wall = tb_series_get(r, "wall_ns");
  tb_conn_pair conns;
  int code = TB_EXIT_OK;
  /* --fault resume: offer no session, so that the resumption check must fire. */
  int fault_resume = r->opt->fault != NULL && strcmp(r->opt->fault, "resume") == 0;
  long i = 0;
  for (; i < r->opt->warmup + r->opt->iterations && code == TB_EXIT_OK; i++) {
    uint64_t client_ns = 0, server_ns = 0;
    if (i == r->opt->warmup) tb_measured_begin(r);
    if (i > r->opt->warmup && tb_measured_stop(r)) break;
    tb_collect_measuring(i >= r->opt->warmup);
    uint64_t t0 = tb_mono_ns();
    code = tb_connect(r, fault_resume ? NULL : session, &conns, &client_ns, &server_ns);
    tb_collect_measuring(0);
    uint64_t t1 = tb_mono_ns();
    if (code == TB_EXIT_OK) code = tb_check_negotiated(r, &conns, 1);
    /* Like a real client, continue with the newest session (TLS 1.3 tickets are meant
     * for one use). */
    void *next = NULL;
    if (code == TB_EXIT_OK) code = take_session(r, &conns, &next);
    tb_disconnect(r, &conns);
    TB_ON(TB_SIDE_CLIENT, (r->ad->tls->session_free(session), TB_OK));
    session = next;
    if (code != TB_EXIT_OK || i < r->opt->warmup) continue;
    if (tb_series_add(client, (double)client_ns) || tb_series_add(server, (double)server_ns) ||
        tb_series_add(wall, (double)(t1 - t0))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  TB_ON(TB_SIDE_CLIENT, (r->ad->tls->session_free(session), TB_OK));
  if (code == TB_EXIT_OK) tb_measured_end(r, i - r->opt->warmup);
  return code;
}

/* One thread of --threads: a full handshake on its contexts for a first session, then
 * the resumed ones. */
static int thread_loop(tb_run *r) {
  tb_conn_pair conns;
  void *session = NULL;
  int code = tb_connect(r, NULL, &conns, NULL, NULL);
  if (code == TB_EXIT_OK) code = tb_check_negotiated(r, &conns, 0);
  if (code == TB_EXIT_OK) code = take_session(r, &conns, &session);
  tb_disconnect(r, &conns);
  return code == TB_EXIT_OK ? resume_from(r, session) : code;
}

static int run(tb_run *r, tb_json *j) {
  (void)j;
  int code = tb_setup_contexts(r, 1);
  if (code != TB_EXIT_OK) return code;
  tb_conn_pair conns;
  void *session = NULL;
  code = tb_first_connection(r, &conns, 0);
  if (code == TB_EXIT_OK) code = take_session(r, &conns, &session);
  tb_disconnect(r, &conns);
  if (code != TB_EXIT_OK) return code;
  if (!r->opt->given[TB_OPT_THREADS]) {
    code = resume_from(r, session);
    tb_locks_count(0);
    return code;
  }
  TB_ON(TB_SIDE_CLIENT, (r->ad->tls->session_free(session), TB_OK));
  return tb_run_threads(r, thread_loop);
}

static int check(tb_options *o) {
  if (tb_refuse_tls13_psk_resumption(o, "resume") != 0) return -1;
  return tb_check_threads(o);
}

const tb_scenario tb_scenario_resume = {
    .name = "resume",
    .summary = "resumed handshakes (tickets or session cache), both sides in this process",
    .flags = TB_SC_TLS | TB_SC_ONE_PROCESS | TB_SC_TCP | TB_SC_HEAP | TB_SC_INSTRUCTIONS,
    .options = options,
    .defaults = defaults,
    .series = series,
    .check = check,
    .params = tb_write_thread_params,
    .run = run,
};
