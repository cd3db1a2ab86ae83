/*
 * What the adapters of the libraries with OpenSSL's API (openssl.c, awslc.c, boringssl.c)
 * share word for word: the error-queue text and the BIO method that joins the library to a
 * tb_transport. Each of those adapters includes it once, after <openssl/bio.h>,
 * <openssl/err.h> and "tlsbench/driver.h", with TB_FAMILY_NAME set to the library's name
 * for messages ("OpenSSL", "AWS-LC", "BoringSSL").
 */
#ifndef TLSBENCH_OPENSSL_FAMILY_H
#define TLSBENCH_OPENSSL_FAMILY_H

#ifndef TB_FAMILY_NAME
#error "define TB_FAMILY_NAME before including openssl_family.h"
#endif

/* ------------------------------------------------------------------------- errors */

/* Formats "what: <every error on the library's queue>" and empties the queue. The queue is
 * per thread and both sides share this thread, so it must never carry over to the next
 * call. (ERR_get_error returns unsigned long in OpenSSL, uint32_t in its forks.) */
static tb_status ossl_fail(char *err, tb_status status, const char *what) {
  char text[TB_ERR_LEN] = "";
  size_t used = 0;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char one[160];
    ERR_error_string_n(e, one, sizeof(one));
    int n = snprintf(text + used, sizeof(text) - used, "%s%s", used ? "; " : "", one);
    if (n < 0 || (size_t)n >= sizeof(text) - used) break;
    used += (size_t)n;
  }
  ERR_clear_error();
  return tb_fail(err, status, "%s: %s", what, used ? text : "(no " TB_FAMILY_NAME " error queued)");
}

/* SSL_get_error needs an empty queue before each I/O call (both sides share this thread's
 * queue). ERR_clear_error costs ~85 ns even on an empty queue, a sixth of a small record
 * write; peeking first costs ~14 ns. */
static void clear_stale_errors(void) {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

/* ------------------------------------------------------------------------- transport BIO */

static BIO_METHOD *g_bio_method;

static int bio_write(BIO *bio, const char *buf, int len) {
  tb_transport *t = BIO_get_data(bio);
  BIO_clear_retry_flags(bio);
  long n = t->send(t->io, (const unsigned char *)buf, (size_t)len);
  if (n > 0) return (int)n;
  if (n == 0 || n == TB_IO_WOULD_BLOCK) BIO_set_retry_write(bio);
  return -1;
}

static int bio_read(BIO *bio, char *buf, int len) {
  tb_transport *t = BIO_get_data(bio);
  BIO_clear_retry_flags(bio);
  long n = t->recv(t->io, (unsigned char *)buf, (size_t)len);
  if (n >= 0) return (int)n; /* 0: the peer closed the stream (EOF) */
  if (n == TB_IO_WOULD_BLOCK) BIO_set_retry_read(bio);
  return -1;
}

static long bio_ctrl(BIO *bio, int cmd, long num, void *ptr) {
  (void)bio;
  (void)num;
  (void)ptr;
  /* The transport has no buffering of its own: a flush is always complete. Everything
   * else (pending counts, kTLS queries, ...) is "not supported", as for a plain socket. */
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *bio) {
  BIO_set_init(bio, 1);
  return 1;
}

static BIO_METHOD *make_bio_method(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tb_transport");
  if (m == NULL || !BIO_meth_set_write(m, bio_write) || !BIO_meth_set_read(m, bio_read) ||
      !BIO_meth_set_ctrl(m, bio_ctrl) || !BIO_meth_set_create(m, bio_create)) {
    BIO_meth_free(m);
    return NULL;
  }
  return m;
}

#endif /* TLSBENCH_OPENSSL_FAMILY_H */
