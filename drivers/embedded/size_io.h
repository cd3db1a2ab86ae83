/* What every code-size program (size_<library>.c) shares: its command line, its socket and
 * the one record it sends. Only this caller's side of the job lives here, the same bytes for
 * every library, so that the programs differ only in what their library needs.
 *
 * The job, the same for every library:
 *   client PORT CA_PEM               connects to 127.0.0.1:PORT, handshakes verifying the
 *                                    server's chain against CA_PEM and the name "localhost",
 *                                    writes one record, reads it back and checks it;
 *   server PORT CHAIN_PEM KEY_PEM    accepts one connection on 127.0.0.1:PORT (PORT 0: any
 *                                    free port, printed on stdout as one line), handshakes
 *                                    with that chain and key, reads one record and writes it
 *                                    back.
 * The certificates come as PEM text on the command line (the one format every library
 * reads: rustls and s2n read no other), so nothing is folded away at compile time and no
 * file code is linked. Exit status 0: the job was done and the record came back unchanged.
 *
 * On a target with no operating system (the Cortex-M and RISC-V firmware builds) there is
 * no socket: the transport is a stand-in of a few bytes (the program is then only linked
 * and measured, never run). */
#ifndef TLSBENCH_SIZE_IO_H
#define TLSBENCH_SIZE_IO_H

#include <stddef.h>
#include <string.h>

#define SIZE_SERVER_NAME "localhost"
#define SIZE_RECORD_LEN 64

#ifdef TLSBENCH_SERVER
#define SIZE_ARGS 4
#else
#define SIZE_ARGS 3
#endif

#if defined(__linux__)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* The connected socket (the client's, or the one connection the server accepts); -1 when
 * the command line is wrong or the socket fails. */
static int size_open(int argc, char **argv) {
  if (argc != SIZE_ARGS) {
#ifdef TLSBENCH_SERVER
    fprintf(stderr, "usage: %s PORT CHAIN_PEM KEY_PEM\n", argv[0]);
#else
    fprintf(stderr, "usage: %s PORT CA_PEM\n", argv[0]);
#endif
    return -1;
  }
  /* A write to a peer that has gone fails instead of ending the program, in the libraries
   * that write to the socket themselves too (OpenSSL's, GnuTLS's and s2n's fd I/O). */
  signal(SIGPIPE, SIG_IGN);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((unsigned short)atoi(argv[1]));
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
#ifdef TLSBENCH_SERVER
  socklen_t len = sizeof addr;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1) != 0 ||
      getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
    close(fd);
    return -1;
  }
  printf("%u\n", (unsigned)ntohs(addr.sin_port));
  fflush(stdout);
  int conn = accept(fd, NULL, NULL);
  close(fd);
  return conn;
#else
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
#endif
}

/* Bytes written or read (0: the peer closed), -1 on error. */
static long size_send(int fd, const void *buf, size_t len) { return (long)write(fd, buf, len); }
static long size_recv(int fd, void *buf, size_t len) { return (long)read(fd, buf, len); }
static void size_close(int fd) { close(fd); }

#else /* no operating system: linked and measured, never run */

/* Values the compiler cannot know (argc, len), so that no library call after them is
 * folded away as unreachable. */
static int size_open(int argc, char **argv) {
  (void)argv;
  return argc;
}
static long size_send(int fd, const void *buf, size_t len) {
  (void)fd;
  (void)buf;
  return (long)len;
}
static long size_recv(int fd, void *buf, size_t len) {
  (void)fd;
  (void)buf;
  (void)len;
  return -1;
}
static void size_close(int fd) { (void)fd; }

#endif

/* The PEM arguments: the client's CA, the server's chain and key. */
#define SIZE_CA_PEM(argv) ((argv)[2])
#define SIZE_CHAIN_PEM(argv) ((argv)[2])
#define SIZE_KEY_PEM(argv) ((argv)[3])

/* The record the client sends and expects back. */
static void size_fill(unsigned char *buf) {
  for (size_t i = 0; i < SIZE_RECORD_LEN; i++) buf[i] = (unsigned char)('a' + i % 26);
}

static int size_echoed(const unsigned char *buf, size_t len) {
  unsigned char expected[SIZE_RECORD_LEN];
  size_fill(expected);
  return len == SIZE_RECORD_LEN && memcmp(buf, expected, len) == 0;
}

#endif
