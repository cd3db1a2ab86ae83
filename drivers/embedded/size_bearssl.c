/* Minimal TLS program for code-size measurement: what one role (client, or server with
 * TLSBENCH_SERVER) links to do size_io.h's job with BearSSL at its defaults
 * (br_ssl_client_init_full, br_ssl_server_init_full_rsa / _ec: every suite and algorithm the
 * library has; the key's type chooses the server's at run time, as in the other libraries).
 * BearSSL allocates nothing: its contexts, its I/O buffer and the decoded certificates are
 * this program's, on its stack, so that bss holds the library's own static data only. It
 * decodes PEM with BearSSL's own decoder. On Linux it runs. */
#include <bearssl.h>

#include "size_io.h"

#define SIZE_MAX_CHAIN 4
#define SIZE_DER_BYTES 16384 /* every certificate of a chain of up to RSA-8192 keys */

/* Decoded DER objects, one after the other in `data`. */
typedef struct der_store {
  unsigned char data[SIZE_DER_BYTES];
  size_t used;
  int overflow;
} der_store;

static void der_append(void *ctx, const void *buf, size_t len) {
  der_store *s = ctx;
  if (len > sizeof s->data - s->used) {
    s->overflow = 1;
    return;
  }
  memcpy(s->data + s->used, buf, len);
  s->used += len;
}

/* Every object of a PEM text into `store`: their offsets and lengths; how many (-1: bad). */
static int pem_decode(const char *pem, der_store *store, size_t *offset, size_t *len, int max) {
  br_pem_decoder_context pc;
  br_pem_decoder_init(&pc);
  size_t left = strlen(pem);
  int count = 0;
  while (left > 0) {
    size_t pushed = br_pem_decoder_push(&pc, pem, left);
    pem += pushed;
    left -= pushed;
    switch (br_pem_decoder_event(&pc)) {
      case BR_PEM_BEGIN_OBJ:
        if (count == max) return -1;
        offset[count] = store->used;
        br_pem_decoder_setdest(&pc, der_append, store);
        break;
      case BR_PEM_END_OBJ:
        len[count] = store->used - offset[count];
        count++;
        break;
      case BR_PEM_ERROR:
        return -1;
      default:
        break;
    }
  }
  return store->overflow ? -1 : count;
}

static int sock_read(void *ctx, unsigned char *buf, size_t len) {
  long n = size_recv(*(int *)ctx, buf, len);
  return n > 0 ? (int)n : -1;
}

static int sock_write(void *ctx, const unsigned char *buf, size_t len) {
  long n = size_send(*(int *)ctx, buf, len);
  return n > 0 ? (int)n : -1;
}

int main(int argc, char **argv) {
  int fd = size_open(argc, argv);
  if (fd < 0) return 1;
  der_store store = {.used = 0, .overflow = 0};
  size_t offset[SIZE_MAX_CHAIN], len[SIZE_MAX_CHAIN];
  unsigned char iobuf[BR_SSL_BUFSIZE_BIDI];
  br_sslio_context ioc;
  br_x509_decoder_context dc;
#ifdef TLSBENCH_SERVER
  int n = pem_decode(SIZE_CHAIN_PEM(argv), &store, offset, len, SIZE_MAX_CHAIN);
  if (n <= 0) return 1;
  br_x509_certificate chain[SIZE_MAX_CHAIN];
  for (int i = 0; i < n; i++) {
    chain[i].data = store.data + offset[i];
    chain[i].data_len = len[i];
  }
  size_t key_offset, key_len;
  if (pem_decode(SIZE_KEY_PEM(argv), &store, &key_offset, &key_len, 1) != 1) return 1;
  br_skey_decoder_context kc;
  br_skey_decoder_init(&kc);
  br_skey_decoder_push(&kc, store.data + key_offset, key_len);
  if (br_skey_decoder_last_error(&kc) != 0) return 1;
  /* The leaf's issuer's key type (BearSSL's static-ECDH suites need it). */
  br_x509_decoder_init(&dc, NULL, NULL);
  br_x509_decoder_push(&dc, chain[0].data, chain[0].data_len);
  if (br_x509_decoder_get_pkey(&dc) == NULL) return 1;
  br_ssl_server_context sc;
  if (br_skey_decoder_key_type(&kc) == BR_KEYTYPE_RSA)
    br_ssl_server_init_full_rsa(&sc, chain, (size_t)n, br_skey_decoder_get_rsa(&kc));
  else
    br_ssl_server_init_full_ec(&sc, chain, (size_t)n,
                               (unsigned)br_x509_decoder_get_signer_key_type(&dc),
                               br_skey_decoder_get_ec(&kc));
  br_ssl_engine_set_buffer(&sc.eng, iobuf, sizeof iobuf, 1);
  if (!br_ssl_server_reset(&sc)) return 1;
  br_sslio_init(&ioc, &sc.eng, sock_read, &fd, sock_write, &fd);
  unsigned char buf[SIZE_RECORD_LEN];
  int got = br_sslio_read(&ioc, buf, sizeof buf); /* the handshake runs first */
  int ok = got > 0 && br_sslio_write_all(&ioc, buf, (size_t)got) == 0 && br_sslio_flush(&ioc) == 0;
#else
  /* The CA certificate as a trust anchor: its name and public key. */
  if (pem_decode(SIZE_CA_PEM(argv), &store, offset, len, 1) != 1) return 1;
  der_store dn = {.used = 0, .overflow = 0};
  br_x509_decoder_init(&dc, der_append, &dn);
  br_x509_decoder_push(&dc, store.data + offset[0], len[0]);
  const br_x509_pkey *pk = br_x509_decoder_get_pkey(&dc); /* points into dc */
  if (pk == NULL || dn.overflow) return 1;
  br_x509_trust_anchor anchor = {{dn.data, dn.used}, BR_X509_TA_CA, *pk};
  br_ssl_client_context cc;
  br_x509_minimal_context xc;
  br_ssl_client_init_full(&cc, &xc, &anchor, 1);
  br_ssl_engine_set_buffer(&cc.eng, iobuf, sizeof iobuf, 1);
  if (!br_ssl_client_reset(&cc, SIZE_SERVER_NAME, 0)) return 1; /* SNI, verified name */
  br_sslio_init(&ioc, &cc.eng, sock_read, &fd, sock_write, &fd);
  unsigned char buf[SIZE_RECORD_LEN];
  size_fill(buf);
  int ok = br_sslio_write_all(&ioc, buf, sizeof buf) == 0 && br_sslio_flush(&ioc) == 0 &&
           br_sslio_read_all(&ioc, buf, sizeof buf) == 0 && size_echoed(buf, sizeof buf);
#endif
  br_sslio_close(&ioc);
  size_close(fd);
  return !ok;
}
