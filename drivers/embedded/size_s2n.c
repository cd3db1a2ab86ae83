/* Minimal TLS program for code-size measurement: what one role (client, or server with
 * TLSBENCH_SERVER) links to do size_io.h's job with s2n-tls (and the AWS-LC libcrypto it is
 * built over) at its default security policy. The library does the socket I/O itself
 * (s2n_connection_set_fd). It is linked with section garbage collection and measured with
 * `size`; it runs. */
#include <s2n.h>

#include "size_io.h"

int main(int argc, char **argv) {
  int fd = size_open(argc, argv);
  if (fd < 0) return 1;
  if (s2n_init() != S2N_SUCCESS) return 1;
  /* Minimal: no system trust store loaded. */
  struct s2n_config *config = s2n_config_new_minimal();
  if (config == NULL) return 1;
#ifdef TLSBENCH_SERVER
  struct s2n_cert_chain_and_key *chain = s2n_cert_chain_and_key_new();
  if (chain == NULL ||
      s2n_cert_chain_and_key_load_pem(chain, SIZE_CHAIN_PEM(argv), SIZE_KEY_PEM(argv)) !=
          S2N_SUCCESS ||
      s2n_config_add_cert_chain_and_key_to_store(config, chain) != S2N_SUCCESS)
    return 1;
  struct s2n_connection *conn = s2n_connection_new(S2N_SERVER);
#else
  if (s2n_config_add_pem_to_trust_store(config, SIZE_CA_PEM(argv)) != S2N_SUCCESS) return 1;
  struct s2n_connection *conn = s2n_connection_new(S2N_CLIENT);
#endif
  if (conn == NULL || s2n_connection_set_config(conn, config) != S2N_SUCCESS) return 1;
  /* A failed handshake returns at once instead of sleeping 10 to 30 s (s2n's blinding). */
  if (s2n_connection_set_blinding(conn, S2N_SELF_SERVICE_BLINDING) != S2N_SUCCESS) return 1;
  if (s2n_connection_set_fd(conn, fd) != S2N_SUCCESS) return 1;
#ifndef TLSBENCH_SERVER
  /* The name sent (SNI), which s2n's client verifies the server's certificate against. */
  if (s2n_set_server_name(conn, SIZE_SERVER_NAME) != S2N_SUCCESS) return 1;
#endif
  s2n_blocked_status blocked = S2N_NOT_BLOCKED;
  int ret = s2n_negotiate(conn, &blocked);
  unsigned char buf[SIZE_RECORD_LEN];
  ssize_t n = -1;
  int ok = 0;
#ifdef TLSBENCH_SERVER
  if (ret == S2N_SUCCESS) n = s2n_recv(conn, buf, sizeof buf, &blocked);
  if (n > 0) ok = s2n_send(conn, buf, n, &blocked) == n;
#else
  size_fill(buf);
  if (ret == S2N_SUCCESS) n = s2n_send(conn, buf, sizeof buf, &blocked);
  if (n == (ssize_t)sizeof buf) n = s2n_recv(conn, buf, sizeof buf, &blocked);
  ok = n > 0 && size_echoed(buf, (size_t)n);
#endif
  s2n_shutdown_send(conn, &blocked);
  size_close(fd);
  s2n_connection_free(conn);
  s2n_config_free(config);
  s2n_cleanup_final();
  return !ok;
}
