/* The scenario loops: what is measured, in what order, and where its samples go. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* The byte pattern of application record `i`: deterministic, different per record. */
static void fill_pattern(unsigned char *buf, size_t len, uint64_t i) {
  for (size_t j = 0; j < len; j++) buf[j] = (unsigned char)(i * 131u + j * 7u + 1u);
}

static unsigned char *harness_alloc(size_t len) {
  tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
  unsigned char *p = malloc(len ? len : 1);
  tb_heap_set_side(side);
  return p;
}

static void harness_free(void *p) {
  tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
  free(p);
  tb_heap_set_side(side);
}

static double ticks_to_ns(tb_run *r, uint64_t ticks) { return (double)ticks * 1e9 / r->tsc_hz; }

/* A series timed by TSC intervals, `per` of them averaged per sample: its values move in
 * steps of the TSC's step / per. */
static void tsc_series(tb_run *r, tb_series *s, int per) {
  if (s != NULL) s->resolution_ns = ticks_to_ns(r, tb_tsc_step()) / per;
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
  if (r->ad->pool_use == NULL) return TB_EXIT_OK;
  tb_status st = TB_ON(side, r->ad->pool_use(conn, &h->pool_peak, &h->pool_retained, r->err));
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

/* The first (cold) connection on fresh contexts. */
static int first_connection(tb_run *r, tb_conn_pair *conns, int expect_resumed) {
  return measured_connection(r, conns, expect_resumed, &r->heap_client, &r->heap_server);
}

/* A second connection on the same contexts after the first was closed: what a server
 * with many connections pays per connection (caches, pools and lazy initialisation of the
 * contexts are already paid). start/ctx are the live bytes just before it. */
static int warm_connection(tb_run *r) {
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

int tb_scenario_handshake(tb_run *r) {
  int code = tb_setup_contexts(r, 0);
  if (code != TB_EXIT_OK) return code;
  tb_conn_pair conns;
  code = first_connection(r, &conns, 0);
  tb_disconnect(r, &conns);
  if (code == TB_EXIT_OK && tb_heap_accounting) code = warm_connection(r);
  if (code != TB_EXIT_OK) return code;
  tb_series *client = tb_series_get(r, "client_cpu_ns", "ns");
  tb_series *server = tb_series_get(r, "server_cpu_ns", "ns");
  tb_series *wall = tb_series_get(r, "wall_ns", "ns");
  tb_series *per_second = tb_series_get(r, "handshakes_per_s", "1/s");
  for (long i = 0; i < r->opt->warmup + r->opt->iterations; i++) {
    uint64_t client_ns = 0, server_ns = 0;
    tb_collect_measuring(i >= r->opt->warmup);
    uint64_t t0 = tb_mono_ns();
    code = tb_connect(r, NULL, &conns, &client_ns, &server_ns);
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
  return TB_EXIT_OK;
}

/* After a handshake: one byte server -> client, so that a TLS 1.3 client has processed
 * the NewSessionTicket that follows the handshake, then the client's session. */
static int take_session(tb_run *r, tb_conn_pair *conns, void **session) {
  unsigned char one = 0x5a, got = 0;
  int code = tb_transfer(r, conns, 0, &one, 1, &got, NULL, NULL, NULL, NULL);
  if (code != TB_EXIT_OK) return code;
  tb_status st = TB_ON(TB_SIDE_CLIENT, r->ad->session_get(conns->client, session, r->err));
  if (st == TB_UNSUPPORTED) return tb_fail_stage(r, TB_EXIT_UNSUPPORTED, "session");
  if (st != TB_OK) return tb_fail_stage(r, TB_EXIT_HANDSHAKE, "session");
  return TB_EXIT_OK;
}

int tb_scenario_resume(tb_run *r) {
  int code = tb_setup_contexts(r, 1);
  if (code != TB_EXIT_OK) return code;
  tb_conn_pair conns;
  void *session = NULL;
  code = first_connection(r, &conns, 0);
  if (code == TB_EXIT_OK) code = take_session(r, &conns, &session);
  tb_disconnect(r, &conns);
  if (code != TB_EXIT_OK) return code;
  tb_series *client = tb_series_get(r, "client_cpu_ns", "ns");
  tb_series *server = tb_series_get(r, "server_cpu_ns", "ns");
  tb_series *wall = tb_series_get(r, "wall_ns", "ns");
  for (long i = 0; i < r->opt->warmup + r->opt->iterations && code == TB_EXIT_OK; i++) {
    uint64_t client_ns = 0, server_ns = 0;
    tb_collect_measuring(i >= r->opt->warmup);
    uint64_t t0 = tb_mono_ns();
    /* --fault resume: offer no session, so that the resumption check must fire. */
    int fault_resume = r->opt->fault != NULL && strcmp(r->opt->fault, "resume") == 0;
    code = tb_connect(r, fault_resume ? NULL : session, &conns, &client_ns, &server_ns);
    tb_collect_measuring(0);
    uint64_t t1 = tb_mono_ns();
    if (code == TB_EXIT_OK) code = tb_check_negotiated(r, &conns, 1);
    /* Like a real client, continue with the newest session (TLS 1.3 tickets are meant
     * for one use). */
    void *next = NULL;
    if (code == TB_EXIT_OK) code = take_session(r, &conns, &next);
    tb_disconnect(r, &conns);
    TB_ON(TB_SIDE_CLIENT, (r->ad->session_free(session), TB_OK));
    session = next;
    if (code != TB_EXIT_OK || i < r->opt->warmup) continue;
    if (tb_series_add(client, (double)client_ns) || tb_series_add(server, (double)server_ns) ||
        tb_series_add(wall, (double)(t1 - t0))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  TB_ON(TB_SIDE_CLIENT, (r->ad->session_free(session), TB_OK));
  return code;
}

/* What the data scenarios share: one verified connection and two harness buffers. */
typedef struct data_session {
  tb_conn_pair conns;
  unsigned char *data, *scratch;
} data_session;

static int data_session_open(tb_run *r, size_t len, data_session *s) {
  memset(s, 0, sizeof(*s));
  int code = tb_setup_contexts(r, 0);
  if (code == TB_EXIT_OK) code = first_connection(r, &s->conns, 0);
  s->data = harness_alloc(len);
  s->scratch = harness_alloc(len);
  if (code == TB_EXIT_OK && (s->data == NULL || s->scratch == NULL)) {
    code = tb_fail_stage(r, TB_EXIT_ERROR, "buffers");
  }
  return code;
}

static void data_session_close(tb_run *r, data_session *s) {
  harness_free(s->data);
  harness_free(s->scratch);
  tb_disconnect(r, &s->conns);
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
static int record_batch(tb_run *r, data_session *s, size_t len, int n, unsigned char *in,
                        uint64_t *send, uint64_t *recv) {
  uint64_t t0 = tb_tsc();
  for (int k = 0; k < n; k++) {
    for (size_t sent = 0; sent < len;) {
      size_t done = 0;
      tb_status st = TB_ON(
          TB_SIDE_CLIENT, r->ad->write(s->conns.client, s->data + sent, len - sent, &done, r->err));
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
    tb_status st =
        TB_ON(TB_SIDE_SERVER, r->ad->read(s->conns.server, in + got, total - got, &done, r->err));
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

int tb_scenario_records(tb_run *r) {
  size_t len = r->opt->payload;
  data_session s;
  int code = data_session_open(r, len, &s);
  tb_series *write_ns = tb_series_get(r, "write_ns", "ns");
  tb_series *read_ns = tb_series_get(r, "read_ns", "ns");
  tsc_series(r, write_ns, 1);
  tsc_series(r, read_ns, 1);
  /* Allocations per record are a heap figure: only the heap driver counts them. */
  tb_series *write_allocs =
      tb_heap_accounting ? tb_series_get(r, "write_allocs", "allocations") : NULL;
  tb_series *read_allocs =
      tb_heap_accounting ? tb_series_get(r, "read_allocs", "allocations") : NULL;
  for (long i = 0; i < r->opt->warmup + r->opt->iterations && code == TB_EXIT_OK; i++) {
    fill_pattern(s.data, len, (uint64_t)i);
    uint64_t send = 0, recv = 0, send_allocs = 0, recv_allocs = 0;
    tb_collect_measuring(i >= r->opt->warmup);
    code = tb_transfer(r, &s.conns, 1, s.data, len, s.scratch, &send, &recv, &send_allocs,
                       &recv_allocs);
    tb_collect_measuring(0);
    if (code != TB_EXIT_OK || i < r->opt->warmup) continue;
    if (tb_series_add(write_ns, ticks_to_ns(r, send)) ||
        tb_series_add(read_ns, ticks_to_ns(r, recv)) ||
        (tb_heap_accounting && (tb_series_add(write_allocs, (double)send_allocs) ||
                                tb_series_add(read_allocs, (double)recv_allocs)))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  /* Then the same records in batches: the per-record mean, beside the single-record
   * distribution above (whose centre the TSC's step quantises for short records). */
  int n = batch_records(len);
  long batches = r->opt->iterations / n > 0 ? r->opt->iterations / n : 1;
  tb_series *write_batch = tb_series_get(r, "write_batch_ns", "ns");
  tb_series *read_batch = tb_series_get(r, "read_batch_ns", "ns");
  tsc_series(r, write_batch, n);
  tsc_series(r, read_batch, n);
  unsigned char *in = code == TB_EXIT_OK ? harness_alloc((size_t)n * len) : NULL;
  if (code == TB_EXIT_OK && in == NULL) code = tb_fail_stage(r, TB_EXIT_ERROR, "buffers");
  for (long b = 0; b < batches && code == TB_EXIT_OK; b++) {
    uint64_t send = 0, recv = 0;
    code = record_batch(r, &s, len, n, in, &send, &recv);
    if (code == TB_EXIT_OK && (tb_series_add(write_batch, ticks_to_ns(r, send) / n) ||
                               tb_series_add(read_batch, ticks_to_ns(r, recv) / n))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  harness_free(in);
  data_session_close(r, &s);
  return code;
}

int tb_scenario_bulk(tb_run *r) {
  size_t chunk = r->opt->payload;
  data_session s;
  int code = data_session_open(r, chunk, &s);
  tb_series *sender = tb_series_get(r, "sender_MBps", "MB/s");
  tb_series *receiver = tb_series_get(r, "receiver_MBps", "MB/s");
  uint64_t record = 0;
  for (long i = 0; i < r->opt->warmup + r->opt->iterations && code == TB_EXIT_OK; i++) {
    uint64_t send = 0, recv = 0;
    tb_collect_measuring(i >= r->opt->warmup);
    for (uint64_t done = 0; done < r->opt->bytes && code == TB_EXIT_OK; done += chunk) {
      size_t len = r->opt->bytes - done < chunk ? (size_t)(r->opt->bytes - done) : chunk;
      fill_pattern(s.data, len, record++);
      code = tb_transfer(r, &s.conns, 1, s.data, len, s.scratch, &send, &recv, NULL, NULL);
    }
    tb_collect_measuring(0);
    if (code != TB_EXIT_OK || i < r->opt->warmup) continue;
    double mb = (double)r->opt->bytes / 1e6;
    if (tb_series_add(sender, mb / (ticks_to_ns(r, send) / 1e9)) ||
        tb_series_add(receiver, mb / (ticks_to_ns(r, recv) / 1e9))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  data_session_close(r, &s);
  return code;
}
