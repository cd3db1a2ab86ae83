/*
 * The names tlsbench accepts, with their IANA code points (drivers/core/names.c): cipher
 * suites, groups and signature schemes from the TLS Parameters registries, AEADs and
 * certificate kinds. The core validates the command line against them; an adapter maps
 * them to its library's own constants from here instead of keeping its own copy (for a
 * library that names things by code point, the code is the constant).
 */
#ifndef TLSBENCH_NAMES_H
#define TLSBENCH_NAMES_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_name {
  const char *name;
  unsigned code; /* the IANA code point (suites, groups, signature schemes); 0: none */
  /* Cipher suites: the TLS version (12 or 13) they belong to. Signature schemes: the newest
   * version whose CertificateVerify may use them (12: PKCS#1 v1.5 and SHA-1 schemes, which
   * RFC 8446 4.2.3 excludes from TLS 1.3; 13: the others). */
  int tls;
} tb_name;

/* NULL-terminated tables. */
extern const tb_name tb_suite_names[], tb_group_names[], tb_sigalg_names[], tb_aead_names[],
    tb_cert_kinds[];

/* The entry of `name` (exact spelling), or NULL. */
const tb_name *tb_name_find(const tb_name *table, const char *name);
/* The entry of code point `code`, or NULL. */
const tb_name *tb_name_of_code(const tb_name *table, unsigned code);

#ifdef __cplusplus
}
#endif

#endif /* TLSBENCH_NAMES_H */
