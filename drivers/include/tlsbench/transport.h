/*
 * Transports: what connects a client and a server. Adapters see only tb_transport
 * (driver.h); the core creates them. The memory pair runs both sides in one thread;
 * sockets will implement the same interface.
 */
#ifndef TLSBENCH_TRANSPORT_H
#define TLSBENCH_TRANSPORT_H

#include <stddef.h>

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

#endif /* TLSBENCH_TRANSPORT_H */
