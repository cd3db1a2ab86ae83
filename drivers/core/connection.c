/* Measured connections and data sessions of the one-process scenarios (connection.h). */
#include "connection.h"

#include <string.h>

void tb_fill_pattern(unsigned char *buf, size_t len, uint64_t i) {
  for (size_t j = 0; j < len; j++) buf[j] = (unsigned char)(i * 131u + j * 7u + 1u);
}

void tb_heap_after_handshake(tb_side side, tb_heap_report *h, const tb_heap_counters *before) {
  tb_heap_counters c;
  tb_heap_get(side, &c);
  h->valid = 1;
  h->peak = c.peak;
  h->peak_usable = c.peak_usable;
  h->retained = c.live;
  h->retained_usable = c.live_usable;
  h->handshake_allocs = c.allocs - before->allocs;
}

/* A library's own pool (wolfSSL static memory): what the connection held of it, as the
 * library counts it; nothing when the adapter has no pool_use or the build has no pool. */
static int pool_after_handshake(tb_run *r, tb_side side, void *conn, tb_heap_report *h) {
  if (r->ad->tls->pool_use == NULL) return TB_EXIT_OK;
  tb_status st = TB_ON(side, r->ad->tls->pool_use(conn, &h->pool_peak, &h->pool_retained, r->err));
  if (st == TB_UNSUPPORTED) return TB_EXIT_OK;
  if (st != TB_OK) return tb_fail_stage(r, TB_EXIT_HANDSHAKE, "pool use");
  h->pool_valid = 1;
  return TB_EXIT_OK;
}

/* One full handshake with heap figures per side into `client` and `server` (start and ctx
 * as the contexts left them); leaves the connection open. */
static int measured_connection(tb_run *r, tb_conn_pair *conns, int expect_resumed,
                               tb_heap_report *client, tb_heap_report *server) {
  tb_heap_counters client_before, server_before;
  tb_heap_reset_peak(TB_SIDE_CLIENT);
  tb_heap_reset_peak(TB_SIDE_SERVER);
  tb_heap_get(TB_SIDE_CLIENT, &client_before);
  tb_heap_get(TB_SIDE_SERVER, &server_before);
  tb_stack_measure(1);
  int code = tb_connect(r, NULL, conns, NULL, NULL);
  tb_stack_measure(0);
  if (code != TB_EXIT_OK) return code;
  tb_heap_after_handshake(TB_SIDE_CLIENT, client, &client_before);
  tb_heap_after_handshake(TB_SIDE_SERVER, server, &server_before);
  client->stack = tb_stack_high_water(TB_SIDE_CLIENT);
  server->stack = tb_stack_high_water(TB_SIDE_SERVER);
  code = pool_after_handshake(r, TB_SIDE_CLIENT, conns->client, client);
  if (code == TB_EXIT_OK) code = pool_after_handshake(r, TB_SIDE_SERVER, conns->server, server);
  if (code != TB_EXIT_OK) return code;
  return tb_check_negotiated(r, conns, expect_resumed);
}

int tb_first_connection(tb_run *r, tb_conn_pair *conns, int expect_resumed) {
  return measured_connection(r, conns, expect_resumed, &r->heap_client, &r->heap_server);
}

/* What a server with many connections pays per connection: caches, pools and lazy
 * initialisation of the contexts are already paid. start/ctx are the live bytes just
 * before it. */
int tb_warm_connection(tb_run *r) {
  tb_heap_report *sides[2] = {&r->heap_client_warm, &r->heap_server_warm};
  tb_side ids[2] = {TB_SIDE_CLIENT, TB_SIDE_SERVER};
  for (int i = 0; i < 2; i++) {
    tb_heap_counters c;
    tb_heap_get(ids[i], &c);
    sides[i]->start = sides[i]->ctx = c.live;
    sides[i]->start_usable = sides[i]->ctx_usable = c.live_usable;
  }
  tb_conn_pair conns;
  int code = measured_connection(r, &conns, 0, &r->heap_client_warm, &r->heap_server_warm);
  tb_disconnect(r, &conns);
  return code;
}

int tb_data_session_open(tb_run *r, size_t len, tb_data_session *s) {
  memset(s, 0, sizeof(*s));
  int code = tb_setup_contexts(r, 0);
  if (code == TB_EXIT_OK) code = tb_first_connection(r, &s->conns, 0);
  s->data = tb_harness_alloc(len);
  s->scratch = tb_harness_alloc(len);
  if (code == TB_EXIT_OK && (s->data == NULL || s->scratch == NULL)) {
    code = tb_fail_stage(r, TB_EXIT_ERROR, "buffers");
  }
  return code;
}

void tb_data_session_close(tb_run *r, tb_data_session *s) {
  tb_harness_free(s->data);
  tb_harness_free(s->scratch);
  tb_disconnect(r, &s->conns);
}
