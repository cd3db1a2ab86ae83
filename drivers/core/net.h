/* Sockets of the two-process scenarios: addresses, the listening socket and the port file.
 * One copy for the peer server and the serve scenario. */
#ifndef TLSBENCH_NET_H
#define TLSBENCH_NET_H

#include "core.h"

struct addrinfo;

/* "HOST:PORT" to an IPv4 address (passive: to listen on); a usage error otherwise. */
int tb_resolve_address(tb_run *r, const char *hostport, int passive, struct addrinfo **out);

/* A socket listening on --listen, its port in r->listen_port and, once accept() can take a
 * connection, in --port-file. `nonblocking`: for an event loop; else accept() gives up
 * after --peer-timeout. `backlog`: connections the kernel queues before accept(). */
int tb_listen(tb_run *r, int nonblocking, int backlog, int *fd_out);

/* A system call's failure, "what: strerror(errno)", as a harness error (exit 1). */
int tb_sys_fail(tb_run *r, const char *stage, const char *what);

#endif /* TLSBENCH_NET_H */
