/*
 * The command line, read with the option table (options.c) and the scenario registry:
 * getopt's list, the reading of values, the defaults, the generic rules and the usage
 * text all come from those tables, so that the usage cannot drift from what is accepted.
 */
#include "cmdline.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------- values */

static int table_size(const tb_name *table) {
  int count = 0;
  for (const tb_name *n = table; n->name != NULL; n++) count++;
  return count;
}

/* "A, B or C" of a choice option; "A B C" of a name table (lists in the usage text). */
static void print_choices(FILE *out, const tb_choice *c, const char *last_sep) {
  for (int i = 0; c[i].name != NULL; i++) {
    fprintf(out, "%s%s", i == 0 ? "" : c[i + 1].name == NULL ? last_sep : ", ", c[i].name);
  }
}

/* Reads one value into its field; a bad value is a usage error naming the option. */
static int read_value(tb_option_id id, const char *text, tb_options *o) {
  const tb_option *opt = &tb_options_table[id];
  char *field = (char *)o + opt->offset;
  switch (opt->kind) {
    case TB_ARG_FLAG:
      *(int *)field = 1;
      return 0;
    case TB_ARG_TEXT:
      *(const char **)field = text;
      return 0;
    case TB_ARG_NAME:
      if (tb_name_find(opt->names, text) != NULL) {
        *(const char **)field = text;
        return 0;
      }
      fprintf(stderr, "tlsbench-driver: unknown --%s '%s'; known:", opt->name, text);
      if (table_size(opt->names) > 20) {
        /* The cipher suites: too many to list here. */
        fprintf(stderr, " %d IANA names, listed by `tlsbench-driver info --json`\n",
                table_size(opt->names));
        return -1;
      }
      for (const tb_name *n = opt->names; n->name != NULL; n++) fprintf(stderr, " %s", n->name);
      fprintf(stderr, "\n");
      return -1;
    case TB_ARG_CHOICE:
      for (const tb_choice *c = opt->choices; c->name != NULL; c++) {
        if (strcmp(c->name, text) == 0) {
          *(int *)field = c->value;
          return 0;
        }
      }
      fprintf(stderr, "tlsbench-driver: --%s must be ", opt->name);
      print_choices(stderr, opt->choices, " or ");
      fprintf(stderr, ", not %s\n", text);
      return -1;
    default: {
      char *end;
      errno = 0;
      long v = strtol(text, &end, 10);
      if (errno || *end || end == text || v < opt->min || v > opt->max) {
        fprintf(stderr, "tlsbench-driver: --%s takes a whole number from %ld to %ld, not '%s'\n",
                opt->name, opt->min, opt->max, text);
        return -1;
      }
      if (opt->kind == TB_ARG_INT) *(int *)field = (int)v;
      if (opt->kind == TB_ARG_LONG) *(long *)field = v;
      if (opt->kind == TB_ARG_SIZE) *(size_t *)field = (size_t)v;
      if (opt->kind == TB_ARG_U64) *(uint64_t *)field = (uint64_t)v;
      return 0;
    }
  }
}

/* ------------------------------------------------------------------------- rules */

/* The names of the scenarios with all of `flags`, or that take `id`: "a, b and c". */
static void print_scenarios(FILE *out, const tb_scenario *const *registry, unsigned flags, int id,
                            const char *and_word) {
  int n = 0, total = 0;
  for (const tb_scenario *const *s = registry; *s; s++) {
    total += id >= 0 ? tb_scenario_takes(*s, (tb_option_id)id) : ((*s)->flags & flags) == flags;
  }
  for (const tb_scenario *const *s = registry; *s; s++) {
    if (id >= 0 ? !tb_scenario_takes(*s, (tb_option_id)id) : ((*s)->flags & flags) != flags)
      continue;
    fprintf(out, "%s%s", n == 0 ? "" : n == total - 1 ? and_word : ", ", (*s)->name);
    n++;
  }
}

/* Whether the same scenarios take options a and b. */
static int same_takers(const tb_scenario *const *registry, tb_option_id a, tb_option_id b) {
  for (const tb_scenario *const *s = registry; *s; s++) {
    if (tb_scenario_takes(*s, a) != tb_scenario_takes(*s, b)) return 0;
  }
  return 1;
}

/* An option only some scenarios take, given to another: names it with the options of the
 * same scenarios ("--role and --peer-resume are for the peer scenario"). */
static int refuse_foreign_options(const tb_scenario *const *registry, const tb_scenario *sc,
                                  const tb_options *o) {
  for (int id = 0; id < TB_N_OPTIONS; id++) {
    if (tb_options_table[id].scope != TB_FOR_NAMED || !o->given[id] ||
        tb_scenario_takes(sc, (tb_option_id)id))
      continue;
    int n = 0, total = 0;
    for (int k = 0; k < TB_N_OPTIONS; k++) {
      total += tb_options_table[k].scope == TB_FOR_NAMED && same_takers(registry, id, k);
    }
    fprintf(stderr, "tlsbench-driver: ");
    for (int k = 0; k < TB_N_OPTIONS; k++) {
      if (tb_options_table[k].scope != TB_FOR_NAMED || !same_takers(registry, id, k)) continue;
      fprintf(stderr, "%s--%s",
              n == 0           ? ""
              : n == total - 1 ? " and "
                               : ", ",
              tb_options_table[k].name);
      n++;
    }
    fprintf(stderr, " %s for the ", total > 1 ? "are" : "is");
    print_scenarios(stderr, registry, 0, id, " and ");
    int takers = 0;
    for (const tb_scenario *const *s = registry; *s; s++) takers += tb_scenario_takes(*s, id);
    fprintf(stderr, " scenario%s\n", takers > 1 ? "s" : "");
    return -1;
  }
  return 0;
}

/* What the scenario's flags allow of --transport, --io, --fault and --deterministic. */
static int check_by_flags(const tb_scenario *const *registry, const tb_scenario *sc,
                          const tb_options *o) {
  int two_process = (sc->flags & TB_SC_TWO_PROCESS) != 0;
  if (o->transport == TB_LINK_TCP && !(sc->flags & TB_SC_TCP)) {
    if (two_process) {
      return tb_usage_error("%s always runs over TCP; --transport is not for it", sc->name);
    }
    fprintf(stderr, "tlsbench-driver: --transport tcp is for ");
    print_scenarios(stderr, registry, TB_SC_TCP, -1, " and ");
    fprintf(stderr, "; %s has no connection\n", sc->name);
    return -1;
  }
  if (o->io == TB_IO_BIO && two_process) {
    return tb_usage_error("--io bio is for the one-process scenarios");
  }
  if (o->io == TB_IO_FD && (two_process || o->transport != TB_LINK_TCP)) {
    return tb_usage_error("--io fd needs --transport tcp (a socket for the library to use)");
  }
  if (o->fault != NULL && two_process) {
    return tb_usage_error("--fault is for the one-process scenarios");
  }
  if (o->deterministic && !(sc->flags & TB_SC_INSTRUCTIONS)) {
    fprintf(stderr, "tlsbench-driver: --deterministic is for ");
    print_scenarios(stderr, registry, TB_SC_INSTRUCTIONS, -1, " and ");
    fprintf(stderr, " (the scenarios instruction mode counts), not %s\n", sc->name);
    return -1;
  }
  return 0;
}

/* The scheme the certificate kind's leaf signs with (names.c): RSA's is PSS in TLS 1.3 and
 * PKCS#1 v1.5 in TLS 1.2, the others' the same in both. */
static const char *default_sigalg(const char *cert, int tls) {
  if (strncmp(cert, "rsa", 3) == 0) return tls == 13 ? "rsa_pss_rsae_sha256" : "rsa_pkcs1_sha256";
  const tb_name *kind = tb_name_find(tb_cert_kinds, cert);
  const tb_name *scheme = kind != NULL ? tb_name_of_code(tb_sigalg_names, kind->code) : NULL;
  return scheme != NULL ? scheme->name : NULL;
}

/* In TLS 1.2 the supported groups also name the curves an ECDSA certificate may use, so a
 * pinned offer must hold the certificate's curve; TLS 1.3 separates the two. */
static const char *default_group(const char *cert, int tls) {
  if (tls == 12 && strncmp(cert, "ecdsa-p256", 10) == 0) return "secp256r1";
  if (tls == 12 && strcmp(cert, "ecdsa-p384") == 0) return "secp384r1";
  return "x25519";
}

static const char *default_suite(const char *cert, int tls) {
  if (tls == 13) return "TLS_AES_128_GCM_SHA256";
  return strncmp(cert, "rsa", 3) == 0 ? "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
                                      : "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
}

/* ------------------------------------------------------------------------- key exchange */

static const char *kx_name(int kx) { return tb_choice_name(TB_OPT_KX, kx); }

/* The key exchange a TLS 1.2 suite names; RSA-PSK suites (a certificate and a key at once)
 * are none tlsbench runs. */
static int suite_kx(const char *suite) {
  if (strncmp(suite, "TLS_PSK_WITH_", 13) == 0) return TB_KX_PSK;
  if (strncmp(suite, "TLS_ECDHE_PSK_", 14) == 0 || strncmp(suite, "TLS_DHE_PSK_", 12) == 0)
    return TB_KX_PSK_DHE;
  if (strncmp(suite, "TLS_RSA_PSK_", 12) == 0) return TB_KX_UNSET;
  if (strncmp(suite, "TLS_RSA_WITH_", 13) == 0) return TB_KX_RSA;
  return TB_KX_ECDHE;
}

static int is_psk(int kx) { return kx == TB_KX_PSK || kx == TB_KX_PSK_DHE; }

/* --kx against --tls and --suite: the TLS 1.2 suite names its key exchange, which --kx may
 * repeat but not contradict; without --kx it is the suite's (or ecdhe). */
static int choose_kx(tb_options *o) {
  int named = o->tls == 12 && o->suite != NULL ? suite_kx(o->suite) : TB_KX_UNSET;
  if (o->tls == 12 && o->suite != NULL && named == TB_KX_UNSET) {
    return tb_usage_error(
        "%s needs a certificate and a pre-shared key at once (RSA-PSK), which "
        "tlsbench does not run: use a PSK_WITH or ECDHE_PSK suite",
        o->suite);
  }
  if (o->kx != TB_KX_UNSET && named != TB_KX_UNSET && o->kx != named) {
    return tb_usage_error("%s is a suite of --kx %s: --kx %s does not apply to it", o->suite,
                          kx_name(named), kx_name(o->kx));
  }
  if (o->kx == TB_KX_UNSET) o->kx = named != TB_KX_UNSET ? named : TB_KX_ECDHE;
  if (o->tls == 13 && o->kx == TB_KX_RSA) {
    return tb_usage_error("TLS 1.3 has no RSA key exchange: --kx ecdhe, psk or psk_dhe");
  }
  return 0;
}

/* A PSK run: the key authenticates both sides, so nothing about certificates applies, and
 * the key alone (psk) agrees on no group. */
static int check_psk(tb_options *o) {
  static const tb_option_id certificate_options[] = {TB_OPT_CERT, TB_OPT_CHAIN, TB_OPT_SIGALG};
  const char *kx = kx_name(o->kx);
  for (size_t i = 0; i < sizeof(certificate_options) / sizeof(certificate_options[0]); i++) {
    if (o->given[certificate_options[i]]) {
      return tb_usage_error(
          "--kx %s uses no certificate, so --%s does not apply: the pre-shared "
          "key authenticates both sides",
          kx, tb_options_table[certificate_options[i]].name);
    }
  }
  if (o->given[TB_OPT_AUTH] && o->auth != TB_AUTH_NONE) {
    return tb_usage_error(
        "--auth %s verifies certificates, and --kx %s uses none (the "
        "pre-shared key authenticates both sides): leave --auth out",
        tb_choice_name(TB_OPT_AUTH, o->auth), kx);
  }
  if (o->wrong_ca) {
    return tb_usage_error(
        "--wrong-ca: --kx %s verifies no certificate; its negative control is "
        "--fault psk-key (the client holds another key)",
        kx);
  }
  o->auth = TB_AUTH_NONE;
  o->sigalg = NULL;
  if (o->kx == TB_KX_PSK && (o->group != NULL || o->key_share != NULL)) {
    return tb_usage_error(
        "--kx psk agrees on no group (the key alone): --%s does not apply; "
        "--kx psk_dhe adds an (EC)DHE share",
        o->group != NULL ? "group" : "key-share");
  }
  if (o->suite == NULL && o->tls == 12) {
    o->suite = o->kx == TB_KX_PSK ? "TLS_PSK_WITH_AES_128_GCM_SHA256"
                                  : "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA256";
  }
  if (o->suite == NULL) o->suite = "TLS_AES_128_GCM_SHA256";
  if (o->kx == TB_KX_PSK_DHE && o->group == NULL) o->group = "x25519";
  return 0;
}

/* The TLS request as a whole: defaults that follow from the certificate, version and key
 * exchange, and combinations that cannot be asked for. */
static int check_tls(tb_options *o) {
  if (o->suite != NULL && tb_name_find(tb_suite_names, o->suite)->tls != o->tls) {
    return tb_usage_error("%s is a TLS %s suite, not one of TLS %s", o->suite,
                          o->tls == 13 ? "1.2" : "1.3", o->tls == 13 ? "1.3" : "1.2");
  }
  if (choose_kx(o) != 0) return -1;
  if (is_psk(o->kx) && check_psk(o) != 0) return -1;
  if (!is_psk(o->kx)) {
    /* ML-DSA and SLH-DSA sign in TLS 1.3 only (draft-ietf-tls-mldsa 3, draft-reddy-tls-slhdsa
     * 3): no library could run the request. */
    const tb_name *kind = tb_name_find(tb_cert_kinds, o->cert);
    if (kind != NULL && kind->tls == 13 && o->tls == 12) {
      return tb_usage_error(
          "the %s certificate signs in TLS 1.3 only (its scheme %s is not "
          "defined for TLS 1.2): use --tls 1.3",
          o->cert, tb_name_of_code(tb_sigalg_names, kind->code)->name);
    }
    if (o->group == NULL) o->group = default_group(o->cert, o->tls);
    if (o->sigalg == NULL) o->sigalg = default_sigalg(o->cert, o->tls);
    if (o->sigalg == NULL) return tb_usage_error("unknown --cert %s", o->cert);
    if (o->suite == NULL) {
      o->suite =
          o->kx == TB_KX_RSA ? "TLS_RSA_WITH_AES_128_GCM_SHA256" : default_suite(o->cert, o->tls);
    }
  }
  if (o->key_share != NULL &&
      (o->tls != 13 || (o->group != NULL && strcmp(o->key_share, o->group) == 0))) {
    return tb_usage_error(
        "--key-share names the client's first key share, one the server rejects with a "
        "HelloRetryRequest: TLS 1.3 only, and a group other than --group (%s)",
        o->group);
  }
  if (o->key_share != NULL && o->io == TB_IO_FD) {
    return tb_usage_error(
        "--key-share is checked by counting round trips on the wire, which --io fd does not "
        "see: use --io callbacks");
  }
  /* A TLS 1.2 suite names its key exchange: the group must be of that kind. */
  int ffdhe_group = o->group != NULL && strncmp(o->group, "ffdhe", 5) == 0;
  if (o->tls == 12 && strncmp(o->suite, "TLS_ECDHE_", 10) == 0 && ffdhe_group) {
    return tb_usage_error("%s uses an elliptic-curve group, not %s", o->suite, o->group);
  }
  if (o->tls == 12 && strncmp(o->suite, "TLS_DHE_", 8) == 0 && !ffdhe_group) {
    return tb_usage_error("%s uses a finite-field group (ffdhe2048, ffdhe3072), not %s", o->suite,
                          o->group);
  }
  if (o->wrong_ca && o->auth == TB_AUTH_NONE) {
    return tb_usage_error("--wrong-ca needs --auth server or mutual: with none, nobody verifies");
  }
  return 0;
}

static int cert_path(char *out, const tb_options *o, const char *file) {
  int n = snprintf(out, PATH_MAX, "%s/%s/%s", o->cert_dir, o->cert, file);
  if (n < 0 || n >= PATH_MAX) return tb_usage_error("--cert-dir is too long");
  if (access(out, R_OK) != 0) return tb_usage_error("cannot read %s (run `tlsbench certs`)", out);
  return 0;
}

/* The certificate files of both sides, which must exist before anything runs. */
static int find_certificates(tb_options *o) {
  if (o->cert_dir == NULL) {
    return tb_usage_error("--cert-dir is required (tlsbench drive passes it)");
  }
  char chain_name[32];
  snprintf(chain_name, sizeof(chain_name), "server-chain%d.pem", o->chain);
  if (cert_path(o->ca_file, o, o->wrong_ca ? "wrong-ca.pem" : "ca.pem") ||
      cert_path(o->server_chain, o, chain_name) || cert_path(o->server_key, o, "server.key")) {
    return -1;
  }
  snprintf(chain_name, sizeof(chain_name), "client-chain%d.pem", o->chain);
  if (o->auth == TB_AUTH_MUTUAL &&
      (cert_path(o->client_chain, o, chain_name) || cert_path(o->client_key, o, "client.key"))) {
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------- parsing */

int tb_parse_options(int argc, char **argv, const tb_scenario *const *registry, tb_options *o,
                     const tb_scenario **scenario) {
  struct option longs[TB_N_OPTIONS + 2];
  for (int id = 0; id < TB_N_OPTIONS; id++) {
    const tb_option *opt = &tb_options_table[id];
    longs[id] = (struct option){
        opt->name, opt->kind == TB_ARG_FLAG ? no_argument : required_argument, NULL, 256 + id};
  }
  longs[TB_N_OPTIONS] = (struct option){"help", no_argument, NULL, 'h'};
  longs[TB_N_OPTIONS + 1] = (struct option){NULL, 0, NULL, 0};
  memset(o, 0, sizeof(*o));
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    if (c == 'h') {
      tb_usage(stdout, registry);
      exit(0);
    }
    if (c < 256) {
      return tb_usage_error("unknown or incomplete option %s", argv[optind - 1]);
    }
    if (read_value((tb_option_id)(c - 256), optarg, o) != 0) return -1;
    o->given[c - 256] = 1;
  }
  if (optind != argc - 1) return tb_usage_error("give exactly one scenario");
  o->scenario = argv[optind];
  const tb_scenario *sc = NULL;
  for (const tb_scenario *const *s = registry; *s; s++) {
    if (strcmp((*s)->name, o->scenario) == 0) sc = *s;
  }
  if (sc == NULL) return tb_usage_error("unknown scenario %s", o->scenario);
  *scenario = sc;
  if (refuse_foreign_options(registry, sc, o) != 0) return -1;
  /* Defaults: the scenario's, else the option's own. */
  for (int id = 0; id < TB_N_OPTIONS; id++) {
    if (o->given[id]) continue;
    const char *value = tb_scenario_default(sc, (tb_option_id)id);
    if (value == NULL) value = tb_options_table[id].fallback;
    if (value != NULL && read_value((tb_option_id)id, value, o) != 0) {
      return tb_usage_error("(the default of --%s for %s, a bug)", tb_options_table[id].name,
                            sc->name);
    }
  }
  if (check_by_flags(registry, sc, o) != 0 || check_tls(o) != 0) return -1;
  if (sc->check != NULL && sc->check(o) != 0) return -1;
  /* A PSK run reads no certificate. */
  return (sc->flags & TB_SC_TLS) && !is_psk(o->kx) ? find_certificates(o) : 0;
}

/* ------------------------------------------------------------------------- usage */

#define HELP_COLUMN 28
#define SUMMARY_COLUMN 15
#define LINE_WIDTH 96

/* Prints the words of `text` from column `at` (after a space when `space`), wrapped at
 * LINE_WIDTH with lines indented to `indent`; returns the column after it. */
static int wrapped(FILE *out, int at, int indent, int space, const char *text) {
  while (*text) {
    const char *end = text;
    while (*end && *end != ' ') end++;
    int word = (int)(end - text);
    if (space && at + 1 + word > LINE_WIDTH) {
      at = fprintf(out, "\n%*s", indent, "") - 1;
    } else if (space) {
      at += fprintf(out, " ");
    }
    at += fprintf(out, "%.*s", word, text);
    space = 1;
    text = *end ? end + 1 : end;
  }
  return at;
}

static void usage_option(FILE *out, const tb_scenario *const *registry, tb_option_id id) {
  const tb_option *opt = &tb_options_table[id];
  char head[80], list[1024] = "";
  int n = snprintf(head, sizeof(head), "  --%s", opt->name);
  if (opt->kind == TB_ARG_CHOICE) {
    for (const tb_choice *c = opt->choices; c->name != NULL; c++) {
      n += snprintf(head + n, sizeof(head) - (size_t)n, "%c%s", c == opt->choices ? ' ' : '|',
                    c->name);
    }
  } else if (opt->arg != NULL) {
    snprintf(head + n, sizeof(head) - (size_t)n, " %s", opt->arg);
  }
  int at = fprintf(out, "%-*s", HELP_COLUMN, head);
  if ((int)strlen(head) >= HELP_COLUMN) at = fprintf(out, "\n%*s", HELP_COLUMN, "") - 1;
  at = wrapped(out, at, HELP_COLUMN, 0, opt->help);
  size_t used = 0;
  if (opt->kind == TB_ARG_NAME && table_size(opt->names) <= 20) {
    used += (size_t)snprintf(list, sizeof(list), "(one of:");
    for (const tb_name *k = opt->names; k->name != NULL && used < sizeof(list); k++)
      used += (size_t)snprintf(list + used, sizeof(list) - used, " %s", k->name);
    snprintf(list + used, sizeof(list) - used, ")");
    at = wrapped(out, at, HELP_COLUMN, 1, list);
  }
  if (opt->fallback != NULL) {
    snprintf(list, sizeof(list), "(default %s)", opt->fallback);
    at = wrapped(out, at, HELP_COLUMN, 1, list);
  }
  if (opt->scope == TB_FOR_NAMED || opt->scope == TB_FOR_NAMED_OR) {
    used = (size_t)snprintf(list, sizeof(list), "[");
    for (const tb_scenario *const *s = registry; *s; s++) {
      if (!tb_scenario_takes(*s, id)) continue;
      used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", used > 1 ? " " : "",
                               (*s)->name);
    }
    snprintf(list + used, sizeof(list) - used, "]");
    wrapped(out, at, HELP_COLUMN, 1, list);
  }
  fputc('\n', out);
}

void tb_usage(FILE *out, const tb_scenario *const *registry) {
  fprintf(out, "usage: tlsbench-driver SCENARIO [options]\n\nscenarios:\n");
  for (const tb_scenario *const *s = registry; *s; s++) {
    int at = fprintf(out, "  %-12s ", (*s)->name);
    at = wrapped(out, at, SUMMARY_COLUMN, 0, (*s)->summary);
    char defaults[256] = "(";
    size_t used = 1;
    for (const tb_default *d = (*s)->defaults; d->value != NULL && used < sizeof(defaults); d++) {
      used += (size_t)snprintf(defaults + used, sizeof(defaults) - used, "%s--%s %s",
                               used > 1 ? " " : "", tb_options_table[d->option].name, d->value);
    }
    if (used > 1) {
      snprintf(defaults + used, sizeof(defaults) - used, ")");
      wrapped(out, at, SUMMARY_COLUMN, 1, defaults);
    }
    fputc('\n', out);
  }
  static const struct {
    tb_option_scope scope;
    const char *title;
  } sections[] = {
      {TB_FOR_ALL, "\noptions of every scenario:\n"},
      {TB_FOR_TLS, "\noptions of the TLS scenarios ("},
      {TB_FOR_NAMED, "\noptions of the scenarios named after each:\n"},
  };
  for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
    fputs(sections[i].title, out);
    if (sections[i].scope == TB_FOR_TLS) {
      print_scenarios(out, registry, TB_SC_TLS, -1, " and ");
      fprintf(out, "):\n");
    }
    for (int id = 0; id < TB_N_OPTIONS; id++) {
      tb_option_scope scope = tb_options_table[id].scope;
      if (scope == TB_FOR_NAMED_OR) scope = TB_FOR_NAMED;
      if (scope == sections[i].scope) usage_option(out, registry, (tb_option_id)id);
    }
  }
  fprintf(out, "%-*sthis text\n", HELP_COLUMN, "  --help");
}
