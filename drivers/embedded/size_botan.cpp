/* Minimal TLS program for code-size measurement: what one role (client, or server with
 * TLSBENCH_SERVER) links to do size_io.h's job with Botan 3's TLS (C++: Botan has no C API
 * for TLS) at its default policy, with the one change a program without OCSP or CRLs needs
 * (no revocation data required). Botan does no I/O: the program writes what
 * tls_emit_data hands it to the socket and feeds what the socket gives to received_data.
 * Linked with section garbage collection (and the C++ runtime from its archive), measured
 * with `size`; it runs. */
#include <botan/auto_rng.h>
#include <botan/certstor.h>
#include <botan/credentials_manager.h>
#include <botan/data_src.h>
#include <botan/pkcs8.h>
#include <botan/tls_callbacks.h>
#include <botan/tls_client.h>
#include <botan/tls_policy.h>
#include <botan/tls_server.h>
#include <botan/tls_session_manager_noop.h>
#include <botan/x509cert.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "size_io.h"

namespace {

/* Every certificate of a PEM text. */
std::vector<Botan::X509_Certificate> certificates(const char *pem) {
  Botan::DataSource_Memory in(std::string{pem});
  std::vector<Botan::X509_Certificate> out;
  while (!in.end_of_data()) {
    try {
      out.emplace_back(in);
    } catch (const std::exception &) {
      if (out.empty()) throw;
      break; /* text after the last certificate */
    }
  }
  return out;
}

class Policy final : public Botan::TLS::Policy {
 public:
  bool require_cert_revocation_info() const override { return false; }
};

class Credentials final : public Botan::Credentials_Manager {
 public:
  std::vector<Botan::X509_Certificate> chain;
  std::shared_ptr<Botan::Private_Key> key;
  Botan::Certificate_Store_In_Memory cas;

  std::vector<Botan::Certificate_Store *> trusted_certificate_authorities(
      const std::string &, const std::string &) override {
    return {&cas};
  }
  std::vector<Botan::X509_Certificate> find_cert_chain(
      const std::vector<std::string> &key_types, const std::vector<Botan::AlgorithmIdentifier> &,
      const std::vector<Botan::X509_DN> &, const std::string &, const std::string &) override {
    for (const auto &type : key_types)
      if (key != nullptr && type == key->algo_name()) return chain;
    return {};
  }
  std::shared_ptr<Botan::Private_Key> private_key_for(const Botan::X509_Certificate &cert,
                                                      const std::string &,
                                                      const std::string &) override {
    return !chain.empty() && cert == chain.front() ? key : nullptr;
  }
};

class Callbacks final : public Botan::TLS::Callbacks {
 public:
  explicit Callbacks(int socket) : fd(socket) {}
  int fd;
  bool failed = false;
  std::vector<uint8_t> received;

  void tls_emit_data(std::span<const uint8_t> data) override {
    while (!data.empty() && !failed) {
      long n = size_send(fd, data.data(), data.size());
      if (n <= 0)
        failed = true;
      else
        data = data.subspan(static_cast<size_t>(n));
    }
  }
  void tls_record_received(uint64_t, std::span<const uint8_t> data) override {
    received.insert(received.end(), data.begin(), data.end());
  }
  void tls_alert(Botan::TLS::Alert) override {}
};

/* Feeds the channel what the socket has, until `done` (false: the socket or TLS failed). */
template <typename Done>
bool pump(Botan::TLS::Channel &channel, Callbacks &cb, Done done) {
  uint8_t buf[4096];
  while (!done()) {
    long n = size_recv(cb.fd, buf, sizeof buf);
    if (n <= 0 || cb.failed) return false;
    channel.received_data(buf, static_cast<size_t>(n));
  }
  return !cb.failed;
}

}  // namespace

int main(int argc, char **argv) {
  int fd = size_open(argc, argv);
  if (fd < 0) return 1;
  try {
    auto rng = std::make_shared<Botan::AutoSeeded_RNG>();
    auto creds = std::make_shared<Credentials>();
    auto policy = std::make_shared<Policy>();
    auto sessions = std::make_shared<Botan::TLS::Session_Manager_Noop>();
    auto cb = std::make_shared<Callbacks>(fd);
    std::unique_ptr<Botan::TLS::Channel> channel;
#ifdef TLSBENCH_SERVER
    creds->chain = certificates(SIZE_CHAIN_PEM(argv));
    Botan::DataSource_Memory key(std::string{SIZE_KEY_PEM(argv)});
    creds->key = Botan::PKCS8::load_key(key);
    channel = std::make_unique<Botan::TLS::Server>(cb, sessions, creds, policy, rng);
#else
    for (const auto &ca : certificates(SIZE_CA_PEM(argv))) creds->cas.add_certificate(ca);
    /* The name sent (SNI) and verified with the chain; the ClientHello goes out at once. */
    channel = std::make_unique<Botan::TLS::Client>(
        cb, sessions, creds, policy, rng, Botan::TLS::Server_Information(SIZE_SERVER_NAME, 443));
#endif
    if (!pump(*channel, *cb, [&] { return channel->is_active(); })) return 1;
    bool ok;
#ifdef TLSBENCH_SERVER
    ok = pump(*channel, *cb, [&] { return !cb->received.empty(); });
    if (ok) channel->send(cb->received);
#else
    uint8_t buf[SIZE_RECORD_LEN];
    size_fill(buf);
    channel->send(std::span<const uint8_t>(buf, sizeof buf));
    ok = pump(*channel, *cb, [&] { return cb->received.size() >= sizeof buf; }) &&
         size_echoed(cb->received.data(), cb->received.size());
#endif
    channel->close();
    size_close(fd);
    return !(ok && !cb->failed);
  } catch (const std::exception &) {
    return 1;
  }
}
