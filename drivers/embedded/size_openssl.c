/* Minimal TLS program for code-size measurement: what one role (client, or server with
 * TLSBENCH_SERVER) links to do size_io.h's job with a library of OpenSSL's API at its
 * defaults: OpenSSL 3.x and 1.1.1, BoringSSL, AWS-LC (the calls below are common to all
 * four). The library does the socket I/O itself (SSL_set_fd), as a minimal program of
 * these libraries does. It is linked with section garbage collection and measured with
 * `size`; it runs. */
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "size_io.h"

static BIO *pem_bio(const char *pem) { return BIO_new_mem_buf(pem, (int)strlen(pem)); }

int main(int argc, char **argv) {
  int fd = size_open(argc, argv);
  if (fd < 0) return 1;
#ifdef TLSBENCH_SERVER
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == NULL) return 1;
  /* The chain: the leaf, then its issuers. */
  BIO *in = pem_bio(SIZE_CHAIN_PEM(argv));
  X509 *leaf = in != NULL ? PEM_read_bio_X509(in, NULL, NULL, NULL) : NULL;
  if (leaf == NULL || SSL_CTX_use_certificate(ctx, leaf) != 1) return 1;
  X509 *issuer;
  while ((issuer = PEM_read_bio_X509(in, NULL, NULL, NULL)) != NULL)
    if (SSL_CTX_add0_chain_cert(ctx, issuer) != 1) return 1;
  ERR_clear_error(); /* the end of the text, said as an error */
  BIO_free(in);
  in = pem_bio(SIZE_KEY_PEM(argv));
  EVP_PKEY *key = in != NULL ? PEM_read_bio_PrivateKey(in, NULL, NULL, NULL) : NULL;
  if (key == NULL || SSL_CTX_use_PrivateKey(ctx, key) != 1) return 1;
  BIO_free(in);
#else
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == NULL) return 1;
  BIO *in = pem_bio(SIZE_CA_PEM(argv));
  X509 *ca = in != NULL ? PEM_read_bio_X509(in, NULL, NULL, NULL) : NULL;
  if (ca == NULL || X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca) != 1) return 1;
  BIO_free(in);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
#endif
  SSL *ssl = SSL_new(ctx);
  if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) return 1;
  unsigned char buf[SIZE_RECORD_LEN];
  int ok = 0;
#ifdef TLSBENCH_SERVER
  int ret = SSL_accept(ssl);
  if (ret == 1) ret = SSL_read(ssl, buf, (int)sizeof buf);
  if (ret > 0) ok = SSL_write(ssl, buf, ret) == ret;
#else
  /* The name sent (SNI) and the name verified. */
  int ret = SSL_set_tlsext_host_name(ssl, SIZE_SERVER_NAME) == 1 &&
            X509_VERIFY_PARAM_set1_host(SSL_get0_param(ssl), SIZE_SERVER_NAME,
                                        strlen(SIZE_SERVER_NAME)) == 1;
  if (ret == 1) ret = SSL_connect(ssl);
  size_fill(buf);
  if (ret == 1) ret = SSL_write(ssl, buf, (int)sizeof buf);
  if (ret == (int)sizeof buf) ret = SSL_read(ssl, buf, (int)sizeof buf);
  ok = ret > 0 && size_echoed(buf, (size_t)ret);
#endif
  SSL_shutdown(ssl);
  size_close(fd);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return !ok;
}
