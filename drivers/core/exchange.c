/* The request, the response head and the body's pattern (exchange.h). */
#include "exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 'a' + (i * 7) % 26 at offset i, the same on both ends (and in interop.py). It repeats
 * every 26 bytes, so any stretch of it is a slice of one precomputed buffer: writing and
 * checking cost a pointer and a memcmp, no copy. */
#define PATTERN_PERIOD 26
static unsigned char pattern[TB_IO_CHUNK + PATTERN_PERIOD];

void tb_pattern_init(void) {
  for (size_t i = 0; i < sizeof(pattern); i++)
    pattern[i] = (unsigned char)('a' + (i * 7u) % PATTERN_PERIOD);
}

const unsigned char *tb_pattern_at(uint64_t offset) { return pattern + offset % PATTERN_PERIOD; }

uint64_t tb_response_size(const tb_options *o) {
  return o->given[TB_OPT_BYTES] ? o->bytes : (uint64_t)o->payload;
}

int tb_requested_size(const char *request, uint64_t fallback, uint64_t *size) {
  if (strncmp(request, "GET /", 5) != 0) return -1;
  char *end;
  unsigned long long asked = strtoull(request + 5, &end, 10);
  *size =
      end != request + 5 && asked <= (unsigned long long)TB_BYTES_MAX ? (uint64_t)asked : fallback;
  return 0;
}

size_t tb_response_head(char *buf, size_t cap, int minor, uint64_t size, int closing) {
  int n = snprintf(buf, cap,
                   "HTTP/1.%d 200 OK\r\nServer: tlsbench-driver\r\nContent-Type: "
                   "application/octet-stream\r\nContent-Length: %llu\r\n%s\r\n",
                   minor, (unsigned long long)size, closing ? "Connection: close\r\n" : "");
  return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}
