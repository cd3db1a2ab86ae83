#!/usr/bin/env bash
# Finding `wolfssl-ticket-nonce`, shown with the libraries' own programs (no tlsbench
# driver): mbedTLS's programs/ssl/ssl_server2 and wolfSSL's examples/client/client, each
# compiled from its pinned source against its pinned build (the same library bytes the
# interop run links; ./tlsbench only fetches and builds those, and makes the test
# certificates). Debian packages neither program (and its mbedTLS is 2.28, without TLS 1.3).
#
# mbedTLS 3.6's TLS 1.3 server sends NewSessionTicket messages with a 32-byte ticket nonce
# (MBEDTLS_SSL_TLS1_3_TICKET_NONCE_LENGTH). A wolfSSL 5.7.2 client built without
# --enable-ticket-nonce-malloc (the default) keeps the nonce in an 8-byte array
# (TLS13_TICKET_NONCE_STATIC_SZ) and rejects a longer one in DoTls13NewSessionTicket with
# INVALID_PARAMETER (-425), "The security parameter is invalid"; RFC 8446 allows nonces of
# up to 255 bytes. The first read after the handshake meets the ticket and fails.
#
# Run from anywhere: bash findings/wolfssl-mbedtls-ticket-nonce.sh [--nonce-malloc]
# It prints both programs' output twice: with tickets (the failure) and with the server's
# tickets off (tickets=0: the same exchange succeeds), then a verdict line. --nonce-malloc
# adds a third exchange, with tickets, whose client links a wolfSSL built here (a minute)
# from the same source and options plus --enable-ticket-nonce-malloc: it reads the ticket.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tlsbench="$repo/tlsbench"
work=$(mktemp -d "${TMPDIR:-/tmp}/tlsbench-finding-XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A field of `tlsbench build --json` for one variant (built on first use).
build_field() {
  "$tlsbench" build --json --quiet "$1" | python3 -c '
import json, sys
value = json.load(sys.stdin)[0]
for key in sys.argv[1:]:
    value = value[key]
print("\n".join(value) if isinstance(value, list) else value)' "${@:2}"
}
folder() { build_field "$1" folder; }
after_colon() { sed -n 's/^[^:]*: //p' | head -1; }

mbedtls_src=$("$tlsbench" sources fetch mbedtls-3.6.6 | after_colon)
wolfssl_src=$("$tlsbench" sources fetch wolfssl-5.7.2 | after_colon)
mbedtls=$(folder mbedtls-3.6.6)/prefix
wolfssl=$(folder wolfssl-5.7.2)/prefix
certs=$("$tlsbench" certs --json ecdsa-p256 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["kinds"]["ecdsa-p256"]["folder"])')

# mbedTLS's test server, with the helpers it is built with in mbedTLS's own tree.
gcc -O1 -o "$work/ssl_server2" -DMBEDTLS_USER_CONFIG_FILE='"tlsbench_user_config.h"' \
  -I"$mbedtls/include" -I"$mbedtls_src/library" -I"$mbedtls_src/tests/include" \
  -I"$mbedtls_src/framework/tests/include" -I"$mbedtls_src/framework/tests/programs" \
  "$mbedtls_src/programs/ssl/ssl_server2.c" "$mbedtls_src/programs/ssl/ssl_test_lib.c" \
  "$mbedtls_src/programs/test/query_config.c" "$mbedtls_src/tests/src/certs.c" \
  "$mbedtls_src/framework/tests/src/helpers.c" \
  "$mbedtls_src/framework/tests/src/psa_crypto_helpers.c" \
  "$mbedtls/lib/libmbedtls.a" "$mbedtls/lib/libmbedx509.a" "$mbedtls/lib/libmbedcrypto.a"
# wolfSSL's example client, with the build's own options.
gcc -O1 -o "$work/client" -I"$wolfssl/include" -include wolfssl/options.h -I"$wolfssl_src" \
  "$wolfssl_src/examples/client/client.c" "$wolfssl/lib/libwolfssl.a" -lm -lpthread

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# One exchange: ssl_server2 (TLS 1.3, tickets=$1) and wolfSSL's client ($2, default the
# pinned build's) sending an HTTP GET.
exchange() {
  local port
  port=$(free_port)
  "$work/ssl_server2" server_addr=127.0.0.1 server_port="$port" force_version=tls13 \
    tickets="$1" crt_file="$certs/server-chain1.pem" key_file="$certs/server.key" \
    auth_mode=none >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q "Waiting for a remote connection" "$work/server.log" && break
    sleep 0.1
  done
  # The example client must start in wolfSSL's tree (it looks for ./certs there).
  local code=0
  (cd "$wolfssl_src" && timeout 30 "${2:-$work/client}" -h 127.0.0.1 -p "$port" -v 4 -x -g \
    -A "$certs/ca.pem") >"$work/client.log" 2>&1 || code=$?
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
  echo "--- wolfSSL example client (exit $code):"
  cat "$work/client.log"
  echo "--- mbedTLS ssl_server2:"
  grep -v '^$' "$work/server.log" | tail -n 6
  return "$code"
}

echo "=== ssl_server2 tickets=1 (mbedTLS's default), wolfSSL client"
with_tickets=0
exchange 1 || with_tickets=$?
echo
echo "=== control: ssl_server2 tickets=0, wolfSSL client"
without_tickets=0
exchange 0 || without_tickets=$?
echo
if [ "${1:-}" = "--nonce-malloc" ]; then
  # The pinned build's configure options and CFLAGS, as the wolfSSL recipe passes them.
  mapfile -t configure < <(build_field wolfssl-5.7.2 options configure)
  cflags=$(build_field wolfssl-5.7.2 options cflags | tr '\n' ' ')
  mkdir -p "$work/wolfssl-tree"
  (cd "$work/wolfssl-tree" && "$wolfssl_src/configure" --prefix="$work/wolfssl-prefix" \
    --enable-static --disable-shared --disable-examples --disable-crypttests \
    --disable-benchmark "${configure[@]}" --enable-ticket-nonce-malloc CC=gcc \
    CFLAGS="$cflags" && make -j"$(nproc)" && make install) >"$work/wolfssl-build.log" 2>&1
  gcc -O1 -o "$work/client-nonce-malloc" -I"$work/wolfssl-prefix/include" \
    -include wolfssl/options.h -I"$wolfssl_src" "$wolfssl_src/examples/client/client.c" \
    "$work/wolfssl-prefix/lib/libwolfssl.a" -lm -lpthread
  echo "=== control: ssl_server2 tickets=1, wolfSSL client built with --enable-ticket-nonce-malloc"
  nonce_malloc=0
  exchange 1 "$work/client-nonce-malloc" || nonce_malloc=$?
  echo
fi
if [ "$with_tickets" -ne 0 ] && [ "$without_tickets" -eq 0 ] && [ "${nonce_malloc:-0}" -eq 0 ]; then
  echo "verdict: reproduced: the client fails only when the server sends tickets"
else
  echo "verdict: not reproduced (with tickets: exit $with_tickets; without: exit" \
    "$without_tickets; with --enable-ticket-nonce-malloc: exit ${nonce_malloc:-not run})"
fi
