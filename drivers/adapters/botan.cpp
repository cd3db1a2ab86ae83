/*
 * The Botan 3 adapter (Botan's TLS 1.2 / 1.3 stack, through its C++ API).
 *
 * Botan's API is C++ (Botan::TLS::Client and Server over Botan::TLS::Callbacks, a Policy,
 * a Credentials_Manager and a Session_Manager), so this adapter is C++: the contract's
 * entry points (tb_adapter_impl and the functions it lists) are C, and no exception ever
 * leaves them (each entry point catches what Botan throws and turns it into a status).
 *
 * The offer, pinned. A Policy subclass per context holds exactly what the run asked:
 * allow_tls12 / allow_tls13 the one version; ciphersuite_list the one suite (and
 * acceptable_ciphersuite nothing else); key_exchange_groups the one group (or, for a
 * HelloRetryRequest run, [key_share, group] with key_exchange_groups_to_offer the key_share
 * alone); allowed_signature_schemes the scheme this side signs with and
 * acceptable_signature_schemes the one it accepts from the peer (the two differ only for
 * --fault client-sigalg). Certificates' own signatures (the CA's) are not the handshake's
 * scheme: acceptable_certificate_signature_schemes lets every scheme Botan has verify them.
 *
 * Pre-shared keys. The Credentials_Manager holds the run's one external key:
 * find_preshared_keys hands it (identity, the suite's hash as its PRF) to Botan's TLS 1.3
 * client and server, and psk_identity / psk() serve TLS 1.2's PSK and ECDHE-PSK suites (no
 * identity hint). TLS 1.3 psk_ke Botan 3 does not have: its client offers psk_dhe_ke alone
 * and its server takes no other mode.
 *
 * Record size. RFC 8449's record_size_limit (Policy::record_size_limit) on both sides, TLS
 * 1.3 only: Botan's TLS 1.2 has no record size knob (no record_size_limit there, no
 * max_fragment_length).
 *
 * Not offered by this build or this adapter (unsupported, with the reason): TLS 1.2 CBC
 * suites and ML-KEM groups (modules not built: variants.toml), Ed25519 and finite-field
 * groups (not built), static-RSA key exchange (Botan 3 has none), TLS 1.3 psk_ke, a record
 * size in TLS 1.2, Botan's socket I/O (--io fd: Botan's TLS does no I/O of its own) and a
 * BIO layer.
 *
 * I/O. Botan does no I/O: it hands every byte it wants sent to tls_emit_data (written to
 * tlsbench's transport at once; what the transport does not take is kept and written first
 * on the next call), and takes received bytes through Channel::received_data, which answers
 * how many more bytes the current record needs: the adapter reads exactly that (the 5-byte
 * header first), so that Botan decrypts one record per read and the plaintext it hands to
 * tls_record_received (kept here until read() takes it) is one record at most.
 *
 * Read-back (driver.h's rule). Botan reports the version, suite and resumption in its
 * Session_Summary (tls_session_established), and the TLS 1.3 group there too
 * (kex_parameters); the TLS 1.2 group is the one Botan asks the adapter's
 * tls_ephemeral_key_agreement callback to agree a key in. Botan reports no
 * signature scheme: the scheme is what Botan asks the adapter's tls_sign_message /
 * tls_verify_message callbacks to sign or verify with (key type and padding, mapped to the
 * IANA scheme in negotiated()). peer_verified: Botan's own chain validation
 * (tls_verify_cert_chain) returned without throwing. The pre-shared key's mode: the
 * summary's key exchange (kex_algo: "PSK" or "ECDHE_PSK", in TLS 1.3 too). These few values
 * live in memory from tb_readback_alloc (charged to no side), never in the connection's
 * heap.
 *
 * CPU paths. Botan picks AES-NI, VAES, CLMUL, AVX2, AVX-512, SHA-NI, ... by CPUID at run time
 * (BOTAN_CLEAR_CPUID clears them: accel = "off", the CPU profiles); cpu_paths reads back the
 * implementation each primitive the TLS suites use has chosen (its provider()).
 *
 * Memory. Botan allocates with operator new and, for secrets, std::calloc (no mlock'ed pool:
 * the locking_allocator module is not built): all of it goes through malloc, which the heap
 * driver wraps. A Botan client sends its ClientHello from its constructor (conn_new): its
 * key share is made there, not in the first handshake call.
 */
#include <botan/aead.h>
#include <botan/block_cipher.h>
#include <botan/hash.h>
#include <botan/mac.h>
#include <botan/stream_cipher.h>
#include <botan/tls_external_psk.h>
#include <botan/asn1_obj.h>
#include <botan/dl_group.h>
#include <botan/auto_rng.h>
#include <botan/certstor.h>
#include <botan/credentials_manager.h>
#include <botan/data_src.h>
#include <botan/pkcs8.h>
#include <botan/pk_keys.h>
#include <botan/rng.h>
#include <botan/tls_alert.h>
#include <botan/tls_callbacks.h>
#include <botan/tls_client.h>
#include <botan/tls_exceptn.h>
#include <botan/tls_policy.h>
#include <botan/tls_server.h>
#include <botan/tls_session.h>
#include <botan/tls_session_manager_memory.h>
#include <botan/tls_session_manager_noop.h>
#include <botan/tls_session_manager_stateless.h>
#include <botan/tls_signature_scheme.h>
#include <botan/version.h>
#include <botan/x509cert.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tlsbench/driver.h"
#include "tlsbench/names.h"

#ifndef TB_BOTAN_VERSION
#define TB_BOTAN_VERSION "unknown"
#endif

namespace {

namespace TLS = Botan::TLS;

/* ------------------------------------------------------------------------- names */

unsigned code_of(const tb_name *table, const char *name) {
  const tb_name *n = name != nullptr ? tb_name_find(table, name) : nullptr;
  return n != nullptr ? n->code : 0;
}

void code_name(const tb_name *table, unsigned code, char out[TB_NAME_LEN]) {
  const tb_name *n = tb_name_of_code(table, code);
  if (n != nullptr)
    std::snprintf(out, TB_NAME_LEN, "%s", n->name);
  else
    std::snprintf(out, TB_NAME_LEN, "0x%04x", code);
}

/* A signature scheme this build can sign and verify with. */
bool scheme_available(unsigned code) {
  return code != 0 && TLS::Signature_Scheme(static_cast<uint16_t>(code)).is_available();
}

/* A group this build can use (TLS 1.3 KEM groups need tls13_pqc, not built). */
bool group_available(unsigned code) {
  const TLS::Group_Params g(static_cast<uint16_t>(code));
  return code != 0 && g.is_available() && g.is_pure_ecc_group();
}

/* The IANA scheme of a signature Botan made or checked: the key's algorithm and the padding
 * Botan asked for (Signature_Scheme::padding_string), matched against the schemes tlsbench
 * names (the brainpool TLS 1.3 schemes share their padding with the NIST curves' and are
 * not asked for here). 0: none matched. */
unsigned scheme_of(const std::string &algorithm, const std::string &padding) {
  for (const tb_name *n = tb_sigalg_names; n->name != nullptr; n++) {
    if (!scheme_available(n->code) || std::strstr(n->name, "brainpool") != nullptr) continue;
    const TLS::Signature_Scheme s(static_cast<uint16_t>(n->code));
    if (s.algorithm_name() == algorithm && s.padding_string() == padding) return n->code;
  }
  return 0;
}

tb_status fail_what(char *err, tb_status st, const char *what, const std::exception &e) {
  return tb_fail(err, st, "%s: %s", what, e.what());
}

/* ------------------------------------------------------------------------- randomness */

/* The core's fixed stream as a Botan RNG (--deterministic): every TLS channel draws from it. */
tb_random_fn g_fill = nullptr;

class StreamRng final : public Botan::RandomNumberGenerator {
 public:
  bool accepts_input() const override { return false; }
  std::string name() const override { return "tlsbench-stream"; }
  void clear() override {}
  bool is_seeded() const override { return true; }

 private:
  void fill_bytes_with_input(std::span<uint8_t> out, std::span<const uint8_t>) override {
    if (!out.empty()) g_fill(out.data(), out.size());
  }
};

/* ------------------------------------------------------------------------- policy */

/* Exactly the run's offer (see the top of this file). */
class PinnedPolicy final : public TLS::Policy {
 public:
  int version = 13;
  uint16_t suite = 0;
  std::vector<TLS::Group_Params> groups;   /* [key_share,] group; empty: no group */
  std::vector<TLS::Group_Params> to_offer; /* the one key share a TLS 1.3 client sends */
  std::vector<TLS::Signature_Scheme> own;  /* what this side signs with */
  std::vector<TLS::Signature_Scheme> peer; /* what it accepts from the peer */
  bool require_client_cert = false;
  size_t tickets = 0;
  std::optional<uint16_t> record_limit; /* RFC 8449's, TLS 1.3 */
  bool psk = false;                     /* a pre-shared key run: nothing is signed */

  bool allow_tls12() const override { return version == 12; }
  bool allow_tls13() const override { return version == 13; }
  bool allow_dtls12() const override { return false; }
  std::vector<uint16_t> ciphersuite_list(TLS::Protocol_Version v) const override {
    const auto cs = TLS::Ciphersuite::by_id(suite);
    if (cs && cs->valid() && cs->usable_in_version(v)) return {suite};
    return {};
  }
  bool acceptable_ciphersuite(const TLS::Ciphersuite &cs) const override {
    return cs.ciphersuite_code() == suite;
  }
  std::vector<TLS::Group_Params> key_exchange_groups() const override { return groups; }
  std::vector<TLS::Group_Params> key_exchange_groups_to_offer() const override { return to_offer; }
  /* A pre-shared key run signs nothing, but Botan's hellos still carry signature_algorithms:
   * Botan's defaults there. */
  std::vector<TLS::Signature_Scheme> allowed_signature_schemes() const override {
    return psk ? TLS::Policy::allowed_signature_schemes() : own;
  }
  std::vector<TLS::Signature_Scheme> acceptable_signature_schemes() const override {
    return psk ? TLS::Policy::acceptable_signature_schemes() : peer;
  }
  std::optional<uint16_t> record_size_limit() const override { return record_limit; }
  std::optional<std::vector<TLS::Signature_Scheme>> acceptable_certificate_signature_schemes()
      const override {
    return TLS::Signature_Scheme::all_available_schemes();
  }
  bool require_client_certificate_authentication() const override { return require_client_cert; }
  bool request_client_certificate_authentication() const override { return require_client_cert; }
  size_t new_session_tickets_upon_handshake_success() const override { return tickets; }
  /* tlsbench's chains have no CRL or OCSP responder: Botan's default would refuse every chain
   * for want of revocation data, and its clients ask for a stapled OCSP response. */
  bool require_cert_revocation_info() const override { return false; }
  bool support_cert_status_message() const override { return false; }
};

/* ------------------------------------------------------------------------- credentials */

class Credentials final : public Botan::Credentials_Manager {
 public:
  std::vector<Botan::X509_Certificate> chain;
  std::shared_ptr<Botan::Private_Key> key;
  std::unique_ptr<Botan::Certificate_Store_In_Memory> cas; /* null: this side verifies none */
  Botan::secure_vector<uint8_t> ticket_key;
  /* The run's external pre-shared key (empty identity: none). */
  std::string psk_identity_;
  std::string psk_prf; /* Botan's name of the hash it is bound to: "SHA-256" or "SHA-384" */
  Botan::secure_vector<uint8_t> psk_key;

  std::vector<Botan::Certificate_Store *> trusted_certificate_authorities(
      const std::string &, const std::string &) override {
    if (cas == nullptr) return {};
    return {cas.get()};
  }
  std::vector<Botan::X509_Certificate> find_cert_chain(
      const std::vector<std::string> &key_types, const std::vector<Botan::AlgorithmIdentifier> &,
      const std::vector<Botan::X509_DN> &, const std::string &, const std::string &) override {
    if (key == nullptr || chain.empty()) return {};
    for (const auto &t : key_types)
      if (t == key->algo_name()) return chain;
    return key_types.empty() ? chain : std::vector<Botan::X509_Certificate>{};
  }
  std::shared_ptr<Botan::Private_Key> private_key_for(const Botan::X509_Certificate &cert,
                                                      const std::string &,
                                                      const std::string &) override {
    if (key != nullptr && !chain.empty() && cert == chain.front()) return key;
    return nullptr;
  }
  Botan::secure_vector<uint8_t> session_ticket_key() override { return ticket_key; }

  /* TLS 1.3 (and, through psk(), TLS 1.2): the one key, when the identities and the hash
   * asked for allow it (none asked: any). */
  std::vector<TLS::ExternalPSK> find_preshared_keys(
      std::string_view, TLS::Connection_Side, const std::vector<std::string> &identities,
      const std::optional<std::string> &prf) override {
    std::vector<TLS::ExternalPSK> keys;
    if (psk_identity_.empty()) return keys;
    if (!identities.empty() &&
        std::find(identities.begin(), identities.end(), psk_identity_) == identities.end())
      return keys;
    if (prf && *prf != psk_prf) return keys;
    keys.emplace_back(psk_identity_, psk_prf, psk_key);
    return keys;
  }
  /* TLS 1.2: the identity a client sends (the server sends no hint). */
  std::string psk_identity(const std::string &, const std::string &, const std::string &) override {
    return psk_identity_;
  }
};

/* ------------------------------------------------------------------------- contexts */

struct BtCtx {
  tb_role role = TB_CLIENT;
  tb_auth auth = TB_AUTH_NONE;
  int version = 13;
  int resumption = 0;
  std::string server_name;
  std::shared_ptr<PinnedPolicy> policy;
  std::shared_ptr<Credentials> creds;
  std::shared_ptr<Botan::RandomNumberGenerator> rng;
  /* Server: one for every connection of the context (its tickets). Client: none here (each
   * connection gets its own, holding the one session it resumes). */
  std::shared_ptr<TLS::Session_Manager> sessions;

  bool verifies() const {
    return (role == TB_CLIENT && auth != TB_AUTH_NONE) ||
           (role == TB_SERVER && auth == TB_AUTH_MUTUAL);
  }
};

tb_status pin_offer(const tb_config *cfg, PinnedPolicy &p, char *err) {
  p.version = cfg->tls_version;
  const tb_name *s = tb_name_find(tb_suite_names, cfg->suite);
  const auto cs =
      s != nullptr ? TLS::Ciphersuite::by_id(static_cast<uint16_t>(s->code)) : std::nullopt;
  if (!cs) return tb_fail(err, TB_UNSUPPORTED, "Botan 3 has no suite %s", cfg->suite);
  if (s->tls != cfg->tls_version)
    return tb_fail(err, TB_UNSUPPORTED, "%s is not a TLS 1.%d suite", cfg->suite,
                   cfg->tls_version % 10);
  if (!cs->valid()) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "no suite '%s' in this Botan build (%s; its modules are listed in "
                   "variants.toml)",
                   cfg->suite,
                   cs->cbc_ciphersuite() ? "TLS 1.2 CBC suites need tls_cbc, not built"
                                         : "an algorithm it needs is not built");
  }
  if (cfg->tls_version == 12 && cfg->group == nullptr && cfg->psk.mode == TB_PSK_NONE)
    return tb_fail(err, TB_UNSUPPORTED, "Botan 3 has no static-RSA key exchange");
  p.suite = static_cast<uint16_t>(s->code);

  const char *groups[2] = {cfg->key_share, cfg->group};
  for (const char *name : groups) {
    if (name == nullptr) continue;
    const unsigned g = code_of(tb_group_names, name);
    if (!group_available(g)) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "no group %s in this Botan build (X25519, P-256 and P-384 are built; "
                     "ML-KEM and finite-field groups are not)",
                     name);
    }
    p.groups.emplace_back(static_cast<uint16_t>(g));
  }
  if (cfg->key_share != nullptr && cfg->role != TB_CLIENT)
    return tb_fail(err, TB_UNSUPPORTED, "a key_share is a client's");
  if (!p.groups.empty()) p.to_offer = {p.groups.front()};

  if (cfg->sigalg != nullptr) {
    const char *client = cfg->client_sigalg != nullptr ? cfg->client_sigalg : cfg->sigalg;
    const unsigned server_code = code_of(tb_sigalg_names, cfg->sigalg);
    const unsigned client_code = code_of(tb_sigalg_names, client);
    for (const auto &[name, code] : {std::pair{cfg->sigalg, server_code}, {client, client_code}})
      if (!scheme_available(code) || std::strstr(name, "brainpool") != nullptr)
        return tb_fail(err, TB_UNSUPPORTED, "Botan 3 does not sign or verify with %s", name);
    const TLS::Signature_Scheme srv(static_cast<uint16_t>(server_code));
    const TLS::Signature_Scheme cli(static_cast<uint16_t>(client_code));
    const TLS::Protocol_Version v =
        cfg->tls_version == 13 ? TLS::Protocol_Version::TLS_V13 : TLS::Protocol_Version::TLS_V12;
    if (!srv.is_compatible_with(v) || !cli.is_compatible_with(v))
      return tb_fail(err, TB_UNSUPPORTED, "Botan refuses %s in TLS 1.%d", cfg->sigalg,
                     cfg->tls_version % 10);
    p.own = {cfg->role == TB_SERVER ? srv : cli};
    p.peer = {cfg->role == TB_SERVER ? cli : srv};
  }
  p.psk = cfg->psk.mode != TB_PSK_NONE;
  if (cfg->record_size != 0) {
    if (cfg->tls_version != 13) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "a chosen record size in TLS 1.2: Botan's TLS 1.2 always sends records of "
                     "up to 16 KiB (it has record_size_limit in TLS 1.3 only, and no "
                     "max_fragment_length)");
    }
    /* RFC 8449: TLS 1.3's limit counts the inner content type byte (Botan: 64 ... 2^14 + 1). */
    p.record_limit = static_cast<uint16_t>(cfg->record_size + 1);
  }
  p.require_client_cert = cfg->role == TB_SERVER && cfg->auth == TB_AUTH_MUTUAL;
  /* One ticket per TLS 1.3 handshake when resuming (as the others send), none otherwise. */
  p.tickets = cfg->resumption && cfg->role == TB_SERVER ? 1 : 0;
  return TB_OK;
}

tb_status load_credentials(const tb_config *cfg, Credentials &c, char *err) {
  if (cfg->chain_file != nullptr && cfg->key_file != nullptr) {
    try {
      Botan::DataSource_Stream chain(cfg->chain_file);
      while (!chain.end_of_data()) {
        try {
          c.chain.emplace_back(chain);
        } catch (const std::exception &) {
          if (c.chain.empty()) throw;
          break; /* text after the last certificate */
        }
      }
      Botan::DataSource_Stream key(cfg->key_file);
      c.key = Botan::PKCS8::load_key(key);
    } catch (const std::exception &e) {
      return tb_fail(err, TB_FAILED, "loading %s and %s: %s", cfg->chain_file, cfg->key_file,
                     e.what());
    }
    if (c.chain.empty()) return tb_fail(err, TB_FAILED, "%s holds no certificate", cfg->chain_file);
  }
  return TB_OK;
}

void bt_ctx_free(void *p) { delete static_cast<BtCtx *>(p); }

tb_status bt_ctx_new(const tb_config *cfg, void **out, char *err) {
  *out = nullptr;
  if (cfg->tls_version != 12 && cfg->tls_version != 13)
    return tb_fail(err, TB_UNSUPPORTED, "TLS 1.%d is not run here", cfg->tls_version % 10);
  if (cfg->psk.mode == TB_PSK_KE && cfg->tls_version == 13) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "Botan 3 does TLS 1.3 psk_dhe_ke only: its client offers that mode alone "
                   "and its server takes no other (no psk_ke)");
  }
  if (cfg->release_buffers) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "Botan keeps its record buffers for the connection's life: no option frees "
                   "them");
  }
  try {
    auto c = std::make_unique<BtCtx>();
    c->role = cfg->role;
    c->auth = cfg->auth;
    c->version = cfg->tls_version;
    c->resumption = cfg->resumption;
    if (cfg->server_name != nullptr) c->server_name = cfg->server_name;
    c->policy = std::make_shared<PinnedPolicy>();
    tb_status st = pin_offer(cfg, *c->policy, err);
    if (st != TB_OK) return st;
    c->creds = std::make_shared<Credentials>();
    st = load_credentials(cfg, *c->creds, err);
    if (st != TB_OK) return st;
    if (cfg->psk.mode != TB_PSK_NONE) {
      c->creds->psk_identity_ = cfg->psk.identity;
      c->creds->psk_prf = std::strcmp(cfg->psk.hash, "SHA384") == 0 ? "SHA-384" : "SHA-256";
      c->creds->psk_key.assign(cfg->psk.key, cfg->psk.key + cfg->psk.key_len);
    }
    if (c->verifies()) {
      if (cfg->ca_file == nullptr) return tb_fail(err, TB_FAILED, "no CA file to verify with");
      c->creds->cas = std::make_unique<Botan::Certificate_Store_In_Memory>();
      Botan::DataSource_Stream cas(cfg->ca_file);
      while (!cas.end_of_data()) {
        try {
          c->creds->cas->add_certificate(Botan::X509_Certificate(cas));
        } catch (const std::exception &) {
          if (c->creds->cas->all_subjects().empty()) throw;
          break; /* text after the last certificate */
        }
      }
    }
    if (g_fill != nullptr)
      c->rng = std::make_shared<StreamRng>();
    else
      c->rng = std::make_shared<Botan::AutoSeeded_RNG>();
    if (cfg->resumption && cfg->role == TB_SERVER) {
      /* Stateless tickets under a fixed key (tlsbench's, not a secret): TLS 1.2 and 1.3. */
      c->creds->ticket_key.resize(32);
      for (size_t i = 0; i < c->creds->ticket_key.size(); i++)
        c->creds->ticket_key[i] = static_cast<uint8_t>(0x5a ^ i);
      c->sessions = std::make_shared<TLS::Session_Manager_Stateless>(c->creds, c->rng);
    } else if (cfg->role == TB_SERVER) {
      c->sessions = std::make_shared<TLS::Session_Manager_Noop>();
    }
    *out = c.release();
    return TB_OK;
  } catch (const std::exception &e) {
    return fail_what(err, TB_FAILED, "setting up the context", e);
  }
}

/* ------------------------------------------------------------------------- connections */

/* What negotiated() reports, noted as Botan tells it (tb_readback_alloc: no side's heap). */
struct Readback {
  int established;
  int version; /* 12 or 13 */
  unsigned suite;
  unsigned group;
  int resumed;
  int psk; /* the summary's key exchange: TB_PSK_KE ("PSK"), TB_PSK_DHE ("ECDHE_PSK", ...) */
  int peer_verified;
  /* The key algorithm and padding of the signatures this side made and checked. */
  char signed_algo[16], signed_padding[48];
  char verified_algo[16], verified_padding[48];
  char alert[TB_ERR_LEN];
};

/* A client's session to resume: Botan's session and the handle (ticket or id) it has. */
struct BtSession {
  TLS::Session session;
  TLS::Session_Handle handle;
};

struct BtConn;

class Callbacks final : public TLS::Callbacks {
 public:
  explicit Callbacks(BtConn *conn) : c(conn) {}
  void tls_emit_data(std::span<const uint8_t> data) override;
  void tls_record_received(uint64_t, std::span<const uint8_t> data) override;
  void tls_alert(TLS::Alert alert) override;
  void tls_session_established(const TLS::Session_Summary &summary) override;
  Botan::secure_vector<uint8_t> tls_ephemeral_key_agreement(
      const std::variant<TLS::Group_Params, Botan::DL_Group> &group,
      const Botan::PK_Key_Agreement_Key &key, const std::vector<uint8_t> &peer,
      Botan::RandomNumberGenerator &rng, const TLS::Policy &policy) override;
  void tls_verify_cert_chain(const std::vector<Botan::X509_Certificate> &chain,
                             const std::vector<std::optional<Botan::OCSP::Response>> &ocsp,
                             const std::vector<Botan::Certificate_Store *> &roots,
                             Botan::Usage_Type usage, std::string_view hostname,
                             const TLS::Policy &policy) override;
  std::vector<uint8_t> tls_sign_message(const Botan::Private_Key &key,
                                        Botan::RandomNumberGenerator &rng, std::string_view padding,
                                        Botan::Signature_Format format,
                                        const std::vector<uint8_t> &msg) override;
  bool tls_verify_message(const Botan::Public_Key &key, std::string_view padding,
                          Botan::Signature_Format format, const std::vector<uint8_t> &msg,
                          const std::vector<uint8_t> &sig) override;

 private:
  BtConn *c;
};

struct BtConn {
  BtCtx *ctx = nullptr;
  tb_transport transport{};
  std::shared_ptr<Callbacks> callbacks;
  std::shared_ptr<TLS::Session_Manager> sessions;
  std::unique_ptr<TLS::Channel> channel;
  /* Bytes Botan emitted that the transport did not take yet. */
  std::vector<uint8_t> unsent;
  /* Plaintext of the last record, until read() takes it. */
  std::vector<uint8_t> plain;
  size_t plain_off = 0;
  size_t want = 5; /* bytes the record being received still needs */
  bool io_error = false;
  bool peer_closed = false;
  Readback *rb = nullptr;

  ~BtConn() {
    channel.reset(); /* before the read-back state its callbacks write to */
    tb_readback_free(rb);
  }
};

void Callbacks::tls_emit_data(std::span<const uint8_t> data) {
  if (c->unsent.empty() && !c->io_error) {
    long n = c->transport.send(c->transport.io, data.data(), data.size());
    if (n < 0) {
      c->io_error = true;
      return;
    }
    data = data.subspan(static_cast<size_t>(n));
  }
  c->unsent.insert(c->unsent.end(), data.begin(), data.end());
}

void Callbacks::tls_record_received(uint64_t, std::span<const uint8_t> data) {
  if (c->plain_off == c->plain.size()) {
    c->plain.clear();
    c->plain_off = 0;
  }
  c->plain.insert(c->plain.end(), data.begin(), data.end());
}

void Callbacks::tls_alert(TLS::Alert alert) {
  if (alert.type() == TLS::Alert::CloseNotify) {
    c->peer_closed = true;
  } else if (c->rb->alert[0] == '\0') {
    std::snprintf(c->rb->alert, sizeof(c->rb->alert), "the peer sent alert %s",
                  alert.type_string().c_str());
  }
}

void Callbacks::tls_session_established(const TLS::Session_Summary &summary) {
  c->rb->established = 1;
  c->rb->version = summary.version().is_tls_13_or_later() ? 13 : 12;
  c->rb->suite = summary.ciphersuite_code();
  c->rb->resumed = summary.was_resumption() ? 1 : 0;
  const std::string kex = summary.kex_algo();
  if (kex == "PSK")
    c->rb->psk = TB_PSK_KE;
  else if (kex.size() > 4 && kex.compare(kex.size() - 4, 4, "_PSK") == 0)
    c->rb->psk = TB_PSK_DHE;
  if (c->rb->version == 13) {
    const auto params = summary.kex_parameters();
    const auto g = params ? TLS::Group_Params::from_string(*params) : std::nullopt;
    if (g) c->rb->group = g->wire_code();
  }
}

Botan::secure_vector<uint8_t> Callbacks::tls_ephemeral_key_agreement(
    const std::variant<TLS::Group_Params, Botan::DL_Group> &group,
    const Botan::PK_Key_Agreement_Key &key, const std::vector<uint8_t> &peer,
    Botan::RandomNumberGenerator &rng, const TLS::Policy &policy) {
  /* TLS 1.2: the group is the one Botan agrees a key in (its Session_Summary names the TLS
   * 1.3 group only). A finite-field group given as parameters (not named) has no code. */
  if (c->ctx->version == 12 && std::holds_alternative<TLS::Group_Params>(group))
    c->rb->group = std::get<TLS::Group_Params>(group).wire_code();
  return TLS::Callbacks::tls_ephemeral_key_agreement(group, key, peer, rng, policy);
}

void Callbacks::tls_verify_cert_chain(const std::vector<Botan::X509_Certificate> &chain,
                                      const std::vector<std::optional<Botan::OCSP::Response>> &ocsp,
                                      const std::vector<Botan::Certificate_Store *> &roots,
                                      Botan::Usage_Type usage, std::string_view hostname,
                                      const TLS::Policy &policy) {
  /* A side that does not verify (auth none; a server without mutual auth) accepts any chain:
   * Botan's own validation would refuse it for want of trust anchors. */
  if (!c->ctx->verifies()) return;
  TLS::Callbacks::tls_verify_cert_chain(chain, ocsp, roots, usage, hostname, policy);
  c->rb->peer_verified = 1;
}

std::vector<uint8_t> Callbacks::tls_sign_message(const Botan::Private_Key &key,
                                                 Botan::RandomNumberGenerator &rng,
                                                 std::string_view padding,
                                                 Botan::Signature_Format format,
                                                 const std::vector<uint8_t> &msg) {
  std::snprintf(c->rb->signed_algo, sizeof(c->rb->signed_algo), "%s", key.algo_name().c_str());
  std::snprintf(c->rb->signed_padding, sizeof(c->rb->signed_padding), "%.*s",
                static_cast<int>(padding.size()), padding.data());
  return TLS::Callbacks::tls_sign_message(key, rng, padding, format, msg);
}

bool Callbacks::tls_verify_message(const Botan::Public_Key &key, std::string_view padding,
                                   Botan::Signature_Format format, const std::vector<uint8_t> &msg,
                                   const std::vector<uint8_t> &sig) {
  std::snprintf(c->rb->verified_algo, sizeof(c->rb->verified_algo), "%s", key.algo_name().c_str());
  std::snprintf(c->rb->verified_padding, sizeof(c->rb->verified_padding), "%.*s",
                static_cast<int>(padding.size()), padding.data());
  return TLS::Callbacks::tls_verify_message(key, padding, format, msg, sig);
}

void bt_conn_free(void *p) { delete static_cast<BtConn *>(p); }

tb_status bt_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                      char *err) {
  auto *x = static_cast<BtCtx *>(ctx);
  *out = nullptr;
  if (transport->fd >= 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "Botan's TLS does no socket I/O of its own (it hands its bytes to callbacks)");
  if (transport->bio)
    return tb_fail(err, TB_UNSUPPORTED, "Botan has no BIO layer beside its callbacks");
  try {
    auto c = std::make_unique<BtConn>();
    c->ctx = x;
    c->transport = *transport;
    c->rb = static_cast<Readback *>(tb_readback_alloc(sizeof(Readback)));
    if (c->rb == nullptr) return tb_fail(err, TB_FAILED, "out of memory");
    c->callbacks = std::make_shared<Callbacks>(c.get());
    if (x->role == TB_SERVER) {
      c->sessions = x->sessions;
      c->channel =
          std::make_unique<TLS::Server>(c->callbacks, c->sessions, x->creds, x->policy, x->rng);
    } else {
      /* The client's sessions: none (no resumption), or one store per connection holding the
       * one session it is asked to resume, and the ticket it gets. */
      if (x->resumption) {
        auto mem = std::make_shared<TLS::Session_Manager_In_Memory>(x->rng, 1);
        if (session != nullptr) {
          const auto *s = static_cast<const BtSession *>(session);
          mem->store(s->session, s->handle);
        }
        c->sessions = mem;
      } else {
        c->sessions = std::make_shared<TLS::Session_Manager_Noop>();
      }
      const auto version =
          x->version == 13 ? TLS::Protocol_Version::TLS_V13 : TLS::Protocol_Version::TLS_V12;
      /* The ClientHello is written from the constructor, through tls_emit_data. */
      c->channel =
          std::make_unique<TLS::Client>(c->callbacks, c->sessions, x->creds, x->policy, x->rng,
                                        TLS::Server_Information(x->server_name, 443), version);
    }
    if (c->io_error) return tb_fail(err, TB_FAILED, "the transport failed");
    *out = c.release();
    return TB_OK;
  } catch (const std::exception &e) {
    return fail_what(err, TB_FAILED, "setting up the connection", e);
  }
}

/* Writes what the transport did not take before. TB_OK: nothing left. */
tb_status flush(BtConn *c, char *err) {
  if (c->io_error) return tb_fail(err, TB_FAILED, "the transport failed");
  while (!c->unsent.empty()) {
    long n = c->transport.send(c->transport.io, c->unsent.data(), c->unsent.size());
    if (n < 0) return tb_fail(err, TB_FAILED, "the transport failed");
    if (n == 0) return TB_WANT_IO;
    c->unsent.erase(c->unsent.begin(), c->unsent.begin() + n);
  }
  return TB_OK;
}

/* Reads what the current record needs and hands it to Botan. TB_OK: bytes were fed;
 * TB_WANT_IO: nothing to read; TB_CLOSED: the transport ended. */
tb_status feed(BtConn *c, char *err) {
  unsigned char buf[16384 + 2048];
  const size_t want = c->want == 0 ? 5 : (c->want < sizeof(buf) ? c->want : sizeof(buf));
  long n = c->transport.recv(c->transport.io, buf, want);
  if (n == TB_IO_WOULD_BLOCK) return TB_WANT_IO;
  if (n == 0) return TB_CLOSED;
  if (n < 0) return tb_fail(err, TB_FAILED, "the transport failed");
  c->want = c->channel->received_data(buf, static_cast<size_t>(n));
  return TB_OK;
}

/* A TLS failure: Botan's message, and the peer's alert where it sent one. */
tb_status tls_failure(BtConn *c, const char *what, const std::exception &e, char *err) {
  if (c->rb->alert[0] != '\0')
    return tb_fail(err, TB_FAILED, "%s: %s (%s)", what, e.what(), c->rb->alert);
  return fail_what(err, TB_FAILED, what, e);
}

tb_status bt_handshake(void *conn, char *err) {
  auto *c = static_cast<BtConn *>(conn);
  try {
    for (;;) {
      tb_status st = flush(c, err);
      if (st == TB_FAILED) return st;
      /* Complete, not only active: a TLS 1.3 server is active (may send) once its Finished
       * is out, before the client's Finished has arrived. */
      if (c->channel->is_handshake_complete()) return st == TB_OK ? TB_OK : TB_WANT_IO;
      if (c->channel->is_closed() || c->peer_closed) {
        return tb_fail(err, TB_FAILED, "the handshake ended: %s",
                       c->rb->alert[0] != '\0' ? c->rb->alert : "the connection closed");
      }
      if (st == TB_WANT_IO) return TB_WANT_IO;
      st = feed(c, err);
      if (st == TB_CLOSED) return tb_fail(err, TB_FAILED, "the peer closed during the handshake");
      if (st != TB_OK) return st;
    }
  } catch (const std::exception &e) {
    (void)flush(c, err); /* the alert Botan wrote */
    return tls_failure(c, "handshake", e, err);
  }
}

tb_status bt_write(void *conn, const unsigned char *buf, size_t len, size_t *done, char *err) {
  auto *c = static_cast<BtConn *>(conn);
  *done = 0;
  try {
    tb_status st = flush(c, err);
    if (st != TB_OK) return st;
    if (!c->channel->is_active())
      return tb_fail(err, TB_FAILED, "the connection is not open for writing");
    c->channel->send(buf, len);
    *done = len; /* Botan took all of it; what the transport did not is sent first next time */
    return c->io_error ? tb_fail(err, TB_FAILED, "the transport failed") : TB_OK;
  } catch (const std::exception &e) {
    return tls_failure(c, "send", e, err);
  }
}

tb_status bt_read(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  auto *c = static_cast<BtConn *>(conn);
  *done = 0;
  try {
    for (;;) {
      if (c->plain_off < c->plain.size()) {
        const size_t n = std::min(len, c->plain.size() - c->plain_off);
        std::memcpy(buf, c->plain.data() + c->plain_off, n);
        c->plain_off += n;
        *done = n;
        return TB_OK;
      }
      if (c->peer_closed) return TB_CLOSED;
      tb_status st = flush(c, err); /* a post-handshake answer (key update) */
      if (st == TB_FAILED) return st;
      st = feed(c, err);
      if (st != TB_OK) return st;
    }
  } catch (const std::exception &e) {
    return tls_failure(c, "receive", e, err);
  }
}

tb_status bt_close(void *conn, char *err) {
  auto *c = static_cast<BtConn *>(conn);
  try {
    if (!c->channel->is_closed_for_writing()) c->channel->close();
    tb_status st = flush(c, err);
    return st == TB_FAILED ? st : TB_OK;
  } catch (const std::exception &e) {
    return fail_what(err, TB_FAILED, "close", e);
  }
}

/* ------------------------------------------------------------------------- read-back */

tb_status bt_negotiated(void *conn, tb_negotiated *out, char *err) {
  auto *c = static_cast<BtConn *>(conn);
  const Readback &rb = *c->rb;
  std::memset(out, 0, sizeof(*out));
  if (!rb.established) return tb_fail(err, TB_FAILED, "Botan reported no established session");
  std::snprintf(out->version, sizeof(out->version), "%s", rb.version == 13 ? "1.3" : "1.2");
  code_name(tb_suite_names, rb.suite, out->suite);
  if (rb.group != 0) code_name(tb_group_names, rb.group, out->group);
  out->resumed = rb.resumed;
  out->peer_verified = rb.peer_verified;
  /* A resumed TLS 1.3 handshake is a PSK handshake too (Botan's kex_algo says so): the mode
   * is that of a full handshake only, the external key's. */
  if (!rb.resumed) out->psk = rb.psk;
  if (!rb.resumed) {
    /* The server's scheme: what the server signed, what the client verified. The client's:
     * the other way round (mutual auth). */
    const bool server = c->ctx->role == TB_SERVER;
    const char *s_algo = server ? rb.signed_algo : rb.verified_algo;
    const char *s_pad = server ? rb.signed_padding : rb.verified_padding;
    const char *c_algo = server ? rb.verified_algo : rb.signed_algo;
    const char *c_pad = server ? rb.verified_padding : rb.signed_padding;
    if (s_algo[0] != '\0') {
      const unsigned code = scheme_of(s_algo, s_pad);
      if (code == 0) return tb_fail(err, TB_FAILED, "no scheme for %s with %s", s_algo, s_pad);
      code_name(tb_sigalg_names, code, out->sigalg);
    }
    if (c_algo[0] != '\0') {
      const unsigned code = scheme_of(c_algo, c_pad);
      if (code == 0) return tb_fail(err, TB_FAILED, "no scheme for %s with %s", c_algo, c_pad);
      code_name(tb_sigalg_names, code, out->client_sigalg);
    }
  }
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

tb_status bt_session_get(void *conn, void **session, char *err) {
  auto *c = static_cast<BtConn *>(conn);
  *session = nullptr;
  if (!c->ctx->resumption || c->sessions == nullptr)
    return tb_fail(err, TB_FAILED, "no session to resume (resumption is off)");
  try {
    /* The store holds the session of this connection's last ticket (or id). */
    const auto found = c->sessions->find(TLS::Server_Information(c->ctx->server_name, 443),
                                         *c->callbacks, *c->ctx->policy);
    if (found.empty()) return tb_fail(err, TB_FAILED, "no session to resume (no ticket yet)");
    *session = new BtSession{found.front().session, found.front().handle};
    return TB_OK;
  } catch (const std::exception &e) {
    return fail_what(err, TB_FAILED, "the session", e);
  }
}

void bt_session_free(void *session) { delete static_cast<BtSession *>(session); }

const tb_tls_class kTls = {
    .ctx_new = bt_ctx_new,
    .ctx_free = bt_ctx_free,
    .conn_new = bt_conn_new,
    .conn_free = bt_conn_free,
    .handshake = bt_handshake,
    .write = bt_write,
    .read = bt_read,
    .close = bt_close,
    .negotiated = bt_negotiated,
    .session_get = bt_session_get,
    .session_free = bt_session_free,
    .pool_use = nullptr,
};

/* ------------------------------------------------------------------------- AEAD */

/* Botan's own AEAD API (Botan::AEAD_Mode), one keyed encryptor and decryptor per context. */
struct BtAead {
  std::unique_ptr<Botan::AEAD_Mode> seal, open;
  Botan::secure_vector<uint8_t> buf;
};

tb_status bt_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **out,
                      char *err) {
  *out = nullptr;
  const char *name = alg == TB_AES_128_GCM   ? "AES-128/GCM"
                     : alg == TB_AES_256_GCM ? "AES-256/GCM"
                                             : "ChaCha20Poly1305";
  try {
    auto a = std::make_unique<BtAead>();
    a->seal = Botan::AEAD_Mode::create(name, Botan::Cipher_Dir::Encryption);
    a->open = Botan::AEAD_Mode::create(name, Botan::Cipher_Dir::Decryption);
    if (a->seal == nullptr || a->open == nullptr)
      return tb_fail(err, TB_UNSUPPORTED, "%s is not in this Botan build", name);
    a->seal->set_key(key, key_len);
    a->open->set_key(key, key_len);
    *out = a.release();
    return TB_OK;
  } catch (const std::exception &e) {
    return fail_what(err, TB_FAILED, name, e);
  }
}

/* One message through `mode`: ad, nonce, then the whole input at once (finish). */
tb_status aead_run(Botan::AEAD_Mode &mode, Botan::secure_vector<uint8_t> &buf,
                   const unsigned char nonce[TB_AEAD_NONCE_LEN], const unsigned char *ad,
                   size_t ad_len, const unsigned char *in, size_t len, unsigned char *out,
                   char *err) {
  try {
    mode.set_associated_data(ad, ad_len);
    mode.start(nonce, TB_AEAD_NONCE_LEN);
    buf.assign(in, in + len);
    mode.finish(buf);
    std::memcpy(out, buf.data(), buf.size());
    return TB_OK;
  } catch (const Botan::Invalid_Authentication_Tag &) {
    return tb_fail(err, TB_FAILED, "the tag does not verify");
  } catch (const std::exception &e) {
    return fail_what(err, TB_FAILED, "AEAD", e);
  }
}

tb_status bt_aead_seal(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                       const unsigned char *ad, size_t ad_len, const unsigned char *in, size_t len,
                       unsigned char *out, char *err) {
  auto *a = static_cast<BtAead *>(aead);
  return aead_run(*a->seal, a->buf, nonce, ad, ad_len, in, len, out, err);
}

tb_status bt_aead_open(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                       const unsigned char *ad, size_t ad_len, const unsigned char *in, size_t len,
                       unsigned char *out, char *err) {
  auto *a = static_cast<BtAead *>(aead);
  /* `len` is the plaintext's: the input carries the tag after it. */
  return aead_run(*a->open, a->buf, nonce, ad, ad_len, in, len + TB_AEAD_TAG_LEN, out, err);
}

void bt_aead_free(void *aead) { delete static_cast<BtAead *>(aead); }

const tb_aead_class kAead = {
    .create = bt_aead_new,
    .seal = bt_aead_seal,
    .open = bt_aead_open,
    .free = bt_aead_free,
};

/* ------------------------------------------------------------------------- global, info */

tb_status bt_global_init(char *err) {
  try {
    /* What Botan sets up once per process on first use (its CPU probe, the tables of suites,
     * signature schemes and object identifiers): here, charged to neither side, not to
     * whichever context comes first. */
    (void)TLS::Ciphersuite::all_known_ciphersuites();
    (void)TLS::Signature_Scheme::all_available_schemes();
    (void)Botan::OID::from_string("RSA");
    (void)Botan::version_string();
    return TB_OK;
  } catch (const std::exception &e) {
    return fail_what(err, TB_FAILED, "Botan's set-up", e);
  }
}

void bt_global_cleanup(void) {}

/* The implementation each primitive of the TLS suites has chosen by CPUID (after
 * BOTAN_CLEAR_CPUID): Botan's provider() names the CPU feature it uses ("aesni",
 * "avx2_aes", "avx512_clmul", "intel_sha", "avx2", ...; "base": none). */
void bt_cpu_paths(char *out, size_t len) {
  try {
    const std::pair<const char *, std::string> paths[] = {
        {"AES-128", Botan::BlockCipher::create_or_throw("AES-128")->provider()},
        {"GHASH", Botan::AEAD_Mode::create_or_throw("AES-128/GCM", Botan::Cipher_Dir::Encryption)
                      ->provider()},
        {"ChaCha20", Botan::StreamCipher::create_or_throw("ChaCha(20)")->provider()},
        {"Poly1305", Botan::MessageAuthenticationCode::create_or_throw("Poly1305")->provider()},
        {"SHA-256", Botan::HashFunction::create_or_throw("SHA-256")->provider()},
        {"SHA-384", Botan::HashFunction::create_or_throw("SHA-384")->provider()},
    };
    std::string text = "providers:";
    for (const auto &[what, provider] : paths)
      text += std::string(" ") + what + " " + provider + ",";
    text.pop_back();
    std::snprintf(out, len, "%s", text.c_str());
  } catch (const std::exception &e) {
    std::snprintf(out, len, "unknown (%s)", e.what());
  }
}

tb_status bt_derandomize(tb_random_fn fill, tb_randomness *out, char *) {
  g_fill = fill;
  out->seeded = 1;
  std::snprintf(out->how, sizeof(out->how),
                "a Botan RandomNumberGenerator drawing from the stream, given to every TLS "
                "channel (its only source of randomness: key shares, randoms, signatures, "
                "blinding, tickets)");
  return TB_OK;
}

const char *g_versions[] = {"1.2", "1.3", nullptr};
std::vector<const char *> g_suites, g_groups, g_sigalgs;
std::string g_version;
const char *g_build_options[] = {"allocator=malloc (no locking_allocator)", nullptr};

tb_status bt_info(tb_info *out, char *err) {
  try {
    g_suites.clear();
    for (const tb_name *n = tb_suite_names; n->name != nullptr; n++) {
      const auto cs = TLS::Ciphersuite::by_id(static_cast<uint16_t>(n->code));
      if (cs && cs->valid() && !cs->psk_ciphersuite() &&
          cs->kex_method() != TLS::Kex_Algo::STATIC_RSA)
        g_suites.push_back(n->name);
    }
    g_suites.push_back(nullptr);
    g_groups.clear();
    for (const tb_name *n = tb_group_names; n->name != nullptr; n++)
      if (group_available(n->code)) g_groups.push_back(n->name);
    g_groups.push_back(nullptr);
    g_sigalgs.clear();
    for (const tb_name *n = tb_sigalg_names; n->name != nullptr; n++)
      if (scheme_available(n->code) && std::strstr(n->name, "brainpool") == nullptr)
        g_sigalgs.push_back(n->name);
    g_sigalgs.push_back(nullptr);
    g_version = "Botan " + Botan::short_version_string() + " (release " TB_BOTAN_VERSION ")";
    std::snprintf(out->version, sizeof(out->version), "%s", g_version.c_str());
    out->build_options = g_build_options;
    out->versions = g_versions;
    out->suites = g_suites.data();
    out->groups = g_groups.data();
    out->sigalgs = g_sigalgs.data();
    out->no_tls = nullptr;
    /* A context's policy, credentials and ticket store are read-only or locked (Botan's
     * session managers and RNGs take their own locks): threads share a context. */
    out->no_threads = nullptr;
    return TB_OK;
  } catch (const std::exception &e) {
    return fail_what(err, TB_FAILED, "info", e);
  }
}

}  // namespace

/* The one C symbol of this unit (driver.h declares it extern "C"). */
const tb_adapter tb_adapter_impl = {
    .name = "botan",
    .global_init = bt_global_init,
    .global_cleanup = bt_global_cleanup,
    .info = bt_info,
    .cpu_paths = bt_cpu_paths,
    .derandomize = bt_derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
