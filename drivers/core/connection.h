/*
 * Connections of the one-process scenarios as measured units: the first (cold) connection
 * with heap per side, a warm one after it, and a data session (one verified connection
 * with two harness buffers) for the scenarios that move application data.
 */
#ifndef TLSBENCH_CONNECTION_H
#define TLSBENCH_CONNECTION_H

#include "core.h"

/* Heap of one side's connection: peak from its creation to the handshake's end, what it
 * retains, and its allocations (`before`: the side's counters at its start). */
void tb_heap_after_handshake(tb_side side, tb_heap_report *h, const tb_heap_counters *before);

/* The first (cold) connection on fresh contexts, measured (heap and stack per side) and
 * checked; left open. */
int tb_first_connection(tb_run *r, tb_conn_pair *conns, int expect_resumed);

/* A second connection on the same contexts after the first was closed, measured into the
 * run's warm heap figures, then closed. */
int tb_warm_connection(tb_run *r);

typedef struct tb_data_session {
  tb_conn_pair conns;
  unsigned char *data, *scratch; /* `len` bytes each, the harness's */
} tb_data_session;

/* Contexts, the first connection and the buffers; close it whatever this returns. */
int tb_data_session_open(tb_run *r, size_t len, tb_data_session *s);
void tb_data_session_close(tb_run *r, tb_data_session *s);

/* The byte pattern of application record `i`: deterministic, different per record. */
void tb_fill_pattern(unsigned char *buf, size_t len, uint64_t i);

#endif /* TLSBENCH_CONNECTION_H */
