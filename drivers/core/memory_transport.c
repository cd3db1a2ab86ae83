/* The in-memory transport pair: two byte queues, client and server in one thread. */
#include <stdlib.h>
#include <string.h>

#include "tlsbench/measure.h"
#include "tlsbench/transport.h"

#define INITIAL_CAPACITY (256 * 1024)

size_t tb_queue_len(const tb_queue *q) { return q->tail - q->head; }

/* Queue memory is the harness's, even when a library call makes the queue grow. */
static int reserve(tb_queue *q, size_t more) {
  if (q->head == q->tail) q->head = q->tail = 0;
  if (q->tail + more <= q->cap) return 0;
  size_t len = tb_queue_len(q);
  memmove(q->buf, q->buf + q->head, len);
  q->head = 0;
  q->tail = len;
  if (len + more <= q->cap) return 0;
  size_t cap = q->cap ? q->cap : INITIAL_CAPACITY;
  while (cap < len + more) cap *= 2;
  tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
  unsigned char *grown = realloc(q->buf, cap);
  tb_heap_set_side(side);
  if (grown == NULL) return -1;
  q->buf = grown;
  q->cap = cap;
  return 0;
}

static long queue_send(tb_queue *q, const unsigned char *buf, size_t len) {
  if (reserve(q, len) != 0) return TB_IO_ERROR;
  memcpy(q->buf + q->tail, buf, len);
  q->tail += len;
  return (long)len;
}

static long queue_recv(tb_queue *q, unsigned char *buf, size_t len) {
  size_t available = tb_queue_len(q);
  if (available == 0) return TB_IO_WOULD_BLOCK;
  if (len > available) len = available;
  memcpy(buf, q->buf + q->head, len);
  q->head += len;
  return (long)len;
}

static long client_send(void *io, const unsigned char *buf, size_t len) {
  return queue_send(&((tb_memory_pair *)io)->to_server, buf, len);
}
static long client_recv(void *io, unsigned char *buf, size_t len) {
  return queue_recv(&((tb_memory_pair *)io)->to_client, buf, len);
}
static long server_send(void *io, const unsigned char *buf, size_t len) {
  return queue_send(&((tb_memory_pair *)io)->to_client, buf, len);
}
static long server_recv(void *io, unsigned char *buf, size_t len) {
  return queue_recv(&((tb_memory_pair *)io)->to_server, buf, len);
}

int tb_memory_pair_init(tb_memory_pair *pair) {
  memset(pair, 0, sizeof(*pair));
  pair->client = (tb_transport){pair, client_send, client_recv, -1};
  pair->server = (tb_transport){pair, server_send, server_recv, -1};
  /* Allocate up front so that no queue growth happens inside a measured call. */
  if (reserve(&pair->to_server, INITIAL_CAPACITY) != 0) return -1;
  if (reserve(&pair->to_client, INITIAL_CAPACITY) != 0) return -1;
  return 0;
}

void tb_memory_pair_reset(tb_memory_pair *pair) {
  pair->to_server.head = pair->to_server.tail = 0;
  pair->to_client.head = pair->to_client.tail = 0;
}

void tb_memory_pair_free(tb_memory_pair *pair) {
  tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
  free(pair->to_server.buf);
  free(pair->to_client.buf);
  tb_heap_set_side(side);
  memset(pair, 0, sizeof(*pair));
}
