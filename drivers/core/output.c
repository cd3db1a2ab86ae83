/* The output around a scenario's own (output.h). */
#include "output.h"

#include <stdio.h>
#include <string.h>

#include "options.h"

void tb_write_params(tb_json *j, const tb_scenario *s, const tb_options *o) {
  tb_json_object(j, "params");
  if (s->flags & TB_SC_TLS) {
    tb_json_str(j, "tls", tb_choice_name(TB_OPT_TLS, o->tls));
    tb_json_str(j, "suite", o->suite);
    /* A pre-shared key: the key exchange, and no certificate (the key alone: no group).
     * Only then, so that the points with certificates keep their stored params. */
    int psk = tb_psk_mode_of(o->kx) != TB_PSK_NONE;
    if (psk) tb_json_str(j, "kx", tb_choice_name(TB_OPT_KX, o->kx));
    /* Static RSA (TLS 1.2) negotiates no group and signs nothing: no such parameters. */
    int static_rsa = o->tls == 12 && strncmp(o->suite, "TLS_RSA_WITH_", 13) == 0;
    tb_json_str(j, "group", static_rsa ? NULL : o->group);
    if (o->key_share != NULL) tb_json_str(j, "key_share", o->key_share);
    tb_json_str(j, "sigalg", static_rsa ? NULL : o->sigalg);
    tb_json_str(j, "cert", psk ? NULL : o->cert);
    if (!psk) tb_json_u64(j, "chain", (uint64_t)o->chain);
    tb_json_str(j, "auth", tb_choice_name(TB_OPT_AUTH, o->auth));
    tb_json_bool(j, "wrong_ca", o->wrong_ca);
    tb_json_u64(j, "record_size", o->record_size);
    /* Only when asked for, so that other points keep their stored params. */
    if (o->release_buffers) tb_json_bool(j, "release_buffers", 1);
  }
  tb_json_u64(j, "payload", o->payload);
  /* --bytes where it was given or the scenario has a default for it (bulk). */
  if (o->given[TB_OPT_BYTES] || tb_scenario_default(s, TB_OPT_BYTES) != NULL)
    tb_json_u64(j, "bytes", o->bytes);
  tb_json_str(j, "aead", o->aead);
  tb_json_i64(j, "iterations", o->iterations);
  tb_json_i64(j, "warmup", o->warmup);
  /* Only when not the default, so that memory-pair points keep their stored params. */
  if (o->transport != TB_LINK_MEMORY)
    tb_json_str(j, "transport", tb_choice_name(TB_OPT_TRANSPORT, o->transport));
  if (o->io != TB_IO_CALLBACKS) tb_json_str(j, "io", tb_choice_name(TB_OPT_IO, o->io));
  if (o->deterministic) tb_json_bool(j, "deterministic", 1);
  if (s->params != NULL) s->params(j, o);
  tb_json_object_end(j);
}

static void write_negotiated(tb_json *j, const tb_run *r) {
  if (!r->have_negotiated) {
    tb_json_null(j, "negotiated");
    return;
  }
  /* A process of one side knows only that side's readback. */
  int peer = (r->scenario->flags & TB_SC_TWO_PROCESS) != 0;
  int server_side = peer && r->local_role == TB_SERVER;
  const tb_negotiated *n = server_side ? &r->server_neg : &r->client_neg;
  tb_json_object(j, "negotiated");
  tb_json_str(j, "version", n->version);
  tb_json_str(j, "suite", n->suite);
  tb_json_str(j, "group", n->group);
  tb_json_str(j, "sigalg", n->sigalg);
  /* The client's CertificateVerify (mutual auth): omitted when the client signed nothing,
   * so that other results keep the shape they were stored with. */
  if (n->client_sigalg[0] != '\0') tb_json_str(j, "client_sigalg", n->client_sigalg);
  /* The pre-shared key exchange mode read back, only where a PSK keyed the handshake. */
  if (n->psk == TB_PSK_KE) tb_json_str(j, "psk", "psk");
  if (n->psk == TB_PSK_DHE) tb_json_str(j, "psk", "psk_dhe");
  tb_json_object(j, "peer_verified");
  /* A peer process knows only its own side's verification. */
  if (!peer || !server_side) tb_json_bool(j, "client", r->client_neg.peer_verified);
  if (!peer || server_side) tb_json_bool(j, "server", r->server_neg.peer_verified);
  tb_json_object_end(j);
  tb_json_bool(j, "resumed", n->resumed);
  tb_json_object_end(j);
}

static void write_side_heap(tb_json *j, const char *key, const tb_heap_report *h) {
  if (!h->valid) {
    tb_json_null(j, key);
    return;
  }
  tb_json_object(j, key);
  tb_json_u64(j, "start", h->start);
  tb_json_u64(j, "ctx", h->ctx);
  tb_json_u64(j, "peak", h->peak);
  tb_json_u64(j, "retained", h->retained);
  tb_json_u64(j, "peak_minus_start", h->peak - h->start);
  tb_json_u64(j, "retained_minus_start", h->retained - h->start);
  tb_json_u64(j, "conn_peak", h->peak - h->ctx);
  tb_json_u64(j, "conn_retained", h->retained - h->ctx);
  tb_json_u64(j, "handshake_allocs", h->handshake_allocs);
  /* Contexts and the connection's handshake calls: how deep the side's stack went. */
  if (h->stack) tb_json_u64(j, "stack", h->stack);
  if (h->pool_valid) {
    /* The library's own pool (wolfSSL static memory), as it counts it. */
    tb_json_u64(j, "pool_peak", h->pool_peak);
    tb_json_u64(j, "pool_retained", h->pool_retained);
  }
  tb_json_object(j, "usable");
  tb_json_u64(j, "start", h->start_usable);
  tb_json_u64(j, "ctx", h->ctx_usable);
  tb_json_u64(j, "peak", h->peak_usable);
  tb_json_u64(j, "retained", h->retained_usable);
  tb_json_object_end(j);
  tb_json_object_end(j);
}

static void write_wire_side(tb_json *j, const char *key, const tb_wire_side *w) {
  tb_json_object(j, key);
  tb_json_u64(j, "bytes_sent", w->bytes);
  tb_json_u64(j, "records_sent", w->records);
  tb_json_u64(j, "flights_sent", w->flights);
  tb_json_object_end(j);
}

/* The flights in order (both sides' in one process, this side's own in two): what the
 * server's first flight holds, against TCP's initial window. */
static void write_flights(tb_json *j, const tb_wire *w) {
  tb_json_array(j, "flights");
  for (int i = 0; i < w->n_flights && i < TB_WIRE_FLIGHTS; i++) {
    tb_json_object(j, NULL);
    tb_json_str(j, "from", w->flight[i].sender == 2 ? "server" : "client");
    tb_json_u64(j, "bytes", w->flight[i].bytes);
    tb_json_u64(j, "records", w->flight[i].records);
    tb_json_object_end(j);
  }
  tb_json_array_end(j);
}

/* Bytes, records and flights per side of the first full and first resumed handshake. */
static void write_wire(tb_json *j, const tb_run *r) {
  const tb_wire_report *reports[2] = {&r->wire_full, &r->wire_resumed};
  const char *keys[2] = {"full", "resumed"};
  tb_json_object(j, "wire");
  for (int i = 0; i < 2; i++) {
    if (!reports[i]->valid) continue;
    tb_json_object(j, keys[i]);
    if (r->scenario->flags & TB_SC_TWO_PROCESS) {
      /* One side: what it sent, and everything it received. */
      int server = r->local_role == TB_SERVER;
      write_wire_side(j, server ? "server" : "client",
                      server ? &reports[i]->wire.server : &reports[i]->wire.client);
      tb_json_u64(j, "bytes_received", r->peer_bytes_received);
      /* The peer's flights as they arrived: the server's first flight, whatever served it. */
      tb_json_array(j, server ? "client_flights_received" : "server_flights_received");
      for (int f = 0; f < TB_WIRE_FLIGHTS && reports[i]->wire.received[f] > 0; f++)
        tb_json_u64(j, NULL, reports[i]->wire.received[f]);
      tb_json_array_end(j);
      if (!server) tb_json_u64(j, "client_hello_bytes", reports[i]->wire.client.first_record);
      if (!server) tb_json_u64(j, "round_trips", reports[i]->client_rtt);
    } else {
      write_wire_side(j, "client", &reports[i]->wire.client);
      write_wire_side(j, "server", &reports[i]->wire.server);
      tb_json_u64(j, "client_hello_bytes", reports[i]->wire.client.first_record);
      tb_json_u64(j, "round_trips", reports[i]->client_rtt);
    }
    write_flights(j, &reports[i]->wire);
    tb_json_object_end(j);
  }
  tb_json_object_end(j);
}

static void write_heap(tb_json *j, const tb_run *r) {
  if (!tb_heap_accounting) {
    tb_json_null(j, "heap"); /* the timing driver: heap is measured by tlsbench-driver-heap */
    return;
  }
  tb_heap_counters process;
  tb_heap_get(TB_SIDES, &process);
  tb_json_object(j, "heap");
  tb_json_object(j, "global");
  tb_json_u64(j, "live", r->heap_global.live);
  tb_json_u64(j, "peak", r->heap_global.peak);
  tb_json_u64(j, "allocs", r->heap_global.allocs);
  tb_json_object_end(j);
  write_side_heap(j, "client", &r->heap_client);
  write_side_heap(j, "server", &r->heap_server);
  if (r->heap_client_warm.valid) {
    write_side_heap(j, "client_warm", &r->heap_client_warm);
    write_side_heap(j, "server_warm", &r->heap_server_warm);
  }
  tb_json_object(j, "process");
  tb_json_u64(j, "peak", process.peak);
  tb_json_u64(j, "peak_usable", process.peak_usable);
  tb_json_u64(j, "allocs", process.allocs);
  tb_json_object_end(j);
  tb_json_object_end(j);
}

static void write_samples(tb_json *j, const tb_run *r) {
  tb_json_object(j, "samples");
  for (int i = 0; i < r->n_series; i++) {
    tb_json_array(j, r->series[i].name);
    for (size_t k = 0; k < r->series[i].n; k++) tb_json_double(j, NULL, r->series[i].values[k]);
    tb_json_array_end(j);
  }
  tb_json_object_end(j);
  tb_json_object(j, "summary");
  for (int i = 0; i < r->n_series; i++) {
    tb_summary s;
    tb_summarize(r->series[i].values, r->series[i].n, &s);
    tb_json_object(j, r->series[i].name);
    tb_json_str(j, "unit", r->series[i].unit);
    if (r->series[i].resolution_ns > 0) {
      tb_json_double(j, "resolution_ns", r->series[i].resolution_ns);
    }
    tb_json_u64(j, "n", s.n);
    tb_json_double(j, "min", s.min);
    tb_json_double(j, "median", s.median);
    tb_json_double(j, "mean", s.mean);
    tb_json_double(j, "p99", s.p99);
    tb_json_double(j, "max", s.max);
    tb_json_object_end(j);
  }
  tb_json_object_end(j);
}

void tb_print_text(const tb_run *r) {
  if (r->have_negotiated) {
    int psk = r->client_neg.psk;
    printf("negotiated TLS %s %s%s group=%s sigalg=%s resumed=%d\n", r->client_neg.version,
           r->client_neg.suite,
           psk == TB_PSK_KE    ? " psk"
           : psk == TB_PSK_DHE ? " psk_dhe"
                               : "",
           r->client_neg.group[0] ? r->client_neg.group : "-",
           r->client_neg.sigalg[0] ? r->client_neg.sigalg : "-", r->client_neg.resumed);
  }
  const tb_heap_report *sides[2] = {&r->heap_client, &r->heap_server};
  for (int s = 0; s < 2; s++) {
    if (!sides[s]->valid) continue;
    printf("heap %-6s start %8lu  peak %8lu  retained %8lu  (connection: peak %lu, retained %lu)\n",
           s ? "server" : "client", (unsigned long)sides[s]->start, (unsigned long)sides[s]->peak,
           (unsigned long)sides[s]->retained, (unsigned long)(sides[s]->peak - sides[s]->ctx),
           (unsigned long)(sides[s]->retained - sides[s]->ctx));
  }
  for (int i = 0; i < r->n_series; i++) {
    tb_summary s;
    tb_summarize(r->series[i].values, r->series[i].n, &s);
    printf("%-18s n=%-6zu min %12.1f  median %12.1f  mean %12.1f  p99 %12.1f  max %12.1f %s\n",
           r->series[i].name, s.n, s.min, s.median, s.mean, s.p99, s.max, r->series[i].unit);
  }
}

/* --locks: each side's lock calls and contentions over every thread's measured iterations
 * (the count they are spread over is `iterations`). */
static void write_locks(tb_json *j, const tb_run *r) {
  static const struct {
    const char *key;
    tb_side side;
  } sides[] = {{"client", TB_SIDE_CLIENT}, {"server", TB_SIDE_SERVER}};
  tb_json_object(j, "locks");
  tb_json_u64(j, "iterations", r->locked_iterations);
  for (size_t s = 0; s < sizeof(sides) / sizeof(sides[0]); s++) {
    const tb_lock_counts *c = &r->locks[sides[s].side];
    tb_json_object(j, sides[s].key);
    for (int k = 0; k < TB_LOCK_KINDS; k++) {
      tb_json_object(j, tb_lock_kind_names[k]);
      tb_json_u64(j, "calls", c->calls[k]);
      tb_json_u64(j, "contended", c->contended[k]);
      tb_json_object_end(j);
    }
    tb_json_object_end(j);
  }
  tb_json_object_end(j);
}

void tb_write_results(tb_json *j, const tb_run *r) {
  write_negotiated(j, r);
  if (r->opt->locks) write_locks(j, r);
  if (r->wire_full.valid) write_wire(j, r);
  write_heap(j, r);
  write_samples(j, r);
}
