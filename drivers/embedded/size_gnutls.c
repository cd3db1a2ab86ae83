/* Minimal TLS program for code-size measurement: what one role (client, or server with
 * TLSBENCH_SERVER) links to do size_io.h's job with GnuTLS at its default priorities. The
 * library does the socket I/O itself (gnutls_transport_set_int). It is linked with section
 * garbage collection and measured with `size`; it runs. */
#include <gnutls/gnutls.h>

#include "size_io.h"

static gnutls_datum_t pem_datum(const char *pem) {
  gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
  return d;
}

static ssize_t read_record(gnutls_session_t session, unsigned char *buf, size_t len) {
  ssize_t n;
  do {
    n = gnutls_record_recv(session, buf, len);
  } while (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED);
  return n;
}

int main(int argc, char **argv) {
  int fd = size_open(argc, argv);
  if (fd < 0) return 1;
  if (gnutls_global_init() != GNUTLS_E_SUCCESS) return 1;
  gnutls_certificate_credentials_t cred;
  if (gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS) return 1;
  gnutls_session_t session;
#ifdef TLSBENCH_SERVER
  gnutls_datum_t chain = pem_datum(SIZE_CHAIN_PEM(argv)), key = pem_datum(SIZE_KEY_PEM(argv));
  if (gnutls_certificate_set_x509_key_mem(cred, &chain, &key, GNUTLS_X509_FMT_PEM) < 0) return 1;
  if (gnutls_init(&session, GNUTLS_SERVER) != GNUTLS_E_SUCCESS) return 1;
#else
  gnutls_datum_t ca = pem_datum(SIZE_CA_PEM(argv));
  if (gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM) != 1) return 1;
  if (gnutls_init(&session, GNUTLS_CLIENT) != GNUTLS_E_SUCCESS) return 1;
  /* The name sent (SNI) and the name verified with the chain. */
  if (gnutls_server_name_set(session, GNUTLS_NAME_DNS, SIZE_SERVER_NAME,
                             strlen(SIZE_SERVER_NAME)) != GNUTLS_E_SUCCESS)
    return 1;
  gnutls_session_set_verify_cert(session, SIZE_SERVER_NAME, 0);
#endif
  if (gnutls_set_default_priority(session) != GNUTLS_E_SUCCESS ||
      gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, cred) != GNUTLS_E_SUCCESS)
    return 1;
  gnutls_transport_set_int(session, fd);
  int ret;
  do {
    ret = gnutls_handshake(session);
  } while (ret < 0 && gnutls_error_is_fatal(ret) == 0);
  unsigned char buf[SIZE_RECORD_LEN];
  ssize_t n = -1;
  int ok = 0;
#ifdef TLSBENCH_SERVER
  if (ret == GNUTLS_E_SUCCESS) n = read_record(session, buf, sizeof buf);
  if (n > 0) ok = gnutls_record_send(session, buf, (size_t)n) == n;
#else
  size_fill(buf);
  if (ret == GNUTLS_E_SUCCESS) n = gnutls_record_send(session, buf, sizeof buf);
  if (n == (ssize_t)sizeof buf) n = read_record(session, buf, sizeof buf);
  ok = n > 0 && size_echoed(buf, (size_t)n);
#endif
  gnutls_bye(session, GNUTLS_SHUT_WR);
  size_close(fd);
  gnutls_deinit(session);
  gnutls_certificate_free_credentials(cred);
  gnutls_global_deinit();
  return !ok;
}
