/*
 * The application exchange of the two-process scenarios (peer, serve, load): a minimal
 * HTTP request "GET /N" answered with N bytes of a known pattern, so that real programs
 * (openssl s_server, curl, h2load, nginx) can be either end and every byte between
 * tlsbench's own ends is checked.
 */
#ifndef TLSBENCH_EXCHANGE_H
#define TLSBENCH_EXCHANGE_H

#include "core.h"

/* Bytes moved per library call when writing or reading a body. */
#define TB_IO_CHUNK 65536
/* The longest request a server reads and the longest response head a client reads. */
#define TB_REQUEST_MAX 4096
#define TB_HEADER_MAX 8192

/* The response body's byte pattern: tb_pattern_at(offset) points at TB_IO_CHUNK bytes of
 * it that start at `offset` of a body. */
void tb_pattern_init(void);
const unsigned char *tb_pattern_at(uint64_t offset);

/* The response size a client asks for: --bytes for a download (beyond --payload's range),
 * else --payload. */
uint64_t tb_response_size(const tb_options *o);

/* The size a request "GET /N ..." asks for into *size (`fallback` when it names none);
 * -1 when it is not a GET request. */
int tb_requested_size(const char *request, uint64_t fallback, uint64_t *size);

/* A 200 response head for a body of `size` bytes (HTTP/1.`minor`, with "Connection: close"
 * when `closing`); returns its length. */
size_t tb_response_head(char *buf, size_t cap, int minor, uint64_t size, int closing);

#endif /* TLSBENCH_EXCHANGE_H */
