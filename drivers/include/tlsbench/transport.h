/*
 * Transports: what connects a client and a server. Adapters see only tb_transport
 * (driver.h); the core creates them. A link joins one client and one server: the memory
 * pair (two byte queues) or the loopback TCP pair (a real socket), both driven from one
 * thread; the core talks only to the link.
 */
#ifndef TLSBENCH_TRANSPORT_H
#define TLSBENCH_TRANSPORT_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "tlsbench/driver.h"

/* A growable byte queue; its memory is always charged to the harness. */
typedef struct tb_queue {
  unsigned char *buf;
  size_t cap, head, tail;
} tb_queue;

/* Two queues and the two transports reading and writing them crosswise. */
typedef struct tb_memory_pair {
  tb_queue to_server, to_client;
  tb_transport client, server;
  int closed;
} tb_memory_pair;

int tb_memory_pair_init(tb_memory_pair *pair);
/* Empties both queues (between connections). */
void tb_memory_pair_reset(tb_memory_pair *pair);
void tb_memory_pair_free(tb_memory_pair *pair);
size_t tb_queue_len(const tb_queue *q);

/* A TCP connection on 127.0.0.1 (listening socket kept, one accepted connection per
 * tlsbench connection); both ends non-blocking. */
typedef struct tb_tcp_pair {
  int listen_fd, client_fd, server_fd;
  struct sockaddr_in addr;
  tb_transport client, server;
} tb_tcp_pair;

int tb_tcp_pair_init(tb_tcp_pair *pair, char *err, size_t errlen);
/* Closes the previous connection and opens a fresh one. */
int tb_tcp_pair_reset(tb_tcp_pair *pair, char *err, size_t errlen);
/* Bytes received by one end and not yet read by its library. */
size_t tb_tcp_pair_in_flight(const tb_tcp_pair *pair, int to_server);
void tb_tcp_pair_free(tb_tcp_pair *pair);

/* What one side put on the wire during one connection: bytes, TLS records (counted from
 * the 5-byte record headers in the stream), flights (runs of sends not interrupted by the
 * peer sending) and the size of its first record (the client's: the ClientHello). */
typedef struct tb_wire_side {
  uint64_t bytes, records, flights, first_record;
  unsigned char header[5];
  size_t header_have, body_left;
} tb_wire_side;

/* One flight: a run of one side's sends not interrupted by the other's (by what this process
 * saw: in two processes, a side sees its own flights only), its bytes and the TLS records
 * whose headers it completed. */
typedef struct tb_wire_flight {
  int sender; /* 1 client, 2 server */
  uint64_t bytes, records;
} tb_wire_flight;

/* The flights a handshake's report keeps, in order: a TLS 1.3 handshake has 3, TLS 1.2 4, a
 * HelloRetryRequest adds 2. */
#define TB_WIRE_FLIGHTS 8

typedef struct tb_wire {
  tb_wire_side client, server;
  int last_sender; /* 0 none yet, 1 client, 2 server */
  tb_wire_flight flight[TB_WIRE_FLIGHTS];
  int n_flights; /* flights seen; those past TB_WIRE_FLIGHTS are counted, not kept */
  /* In two processes (peer): the bytes of each flight this side received, in order (the
   * peer's flights as they arrived, whatever the peer is: another driver or a program). */
  uint64_t received[TB_WIRE_FLIGHTS];
} tb_wire;

/* Counts `len` bytes one side sent into its bytes, records and flights. */
void tb_wire_count_sent(tb_wire *wire, int server, const unsigned char *buf, size_t len);

typedef enum tb_link_kind { TB_LINK_MEMORY = 0, TB_LINK_TCP = 1 } tb_link_kind;

/* What joins the two sides of a run. */
typedef struct tb_link {
  tb_link_kind kind;
  tb_memory_pair memory;
  tb_tcp_pair tcp;
  tb_wire wire;            /* of the current connection; zeroed by tb_link_reset */
  tb_transport counted[2]; /* what adapters get: [0] client, [1] server */
} tb_link;

int tb_link_init(tb_link *link, tb_link_kind kind, char *err, size_t errlen);
/* Readies the link for the next connection (memory: empty queues; TCP: a new connection). */
int tb_link_reset(tb_link *link, char *err, size_t errlen);
/* The transport the given side's connection reads and writes (server != 0: the server's). */
const tb_transport *tb_link_transport(tb_link *link, int server);
/* Bytes sent towards one side that it has not read yet. */
size_t tb_link_in_flight(const tb_link *link, int to_server);
void tb_link_free(tb_link *link);

#endif /* TLSBENCH_TRANSPORT_H */
