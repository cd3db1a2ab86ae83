/* The "declared" object of `info --json` (declare.h), written from the tables themselves. */
#include "declare.h"

#include <stdlib.h>

#include "options.h"

static const struct {
  unsigned flag;
  const char *name;
} flag_names[] = {
    {TB_SC_TLS, "tls"},   {TB_SC_ONE_PROCESS, "one_process"},
    {TB_SC_TCP, "tcp"},   {TB_SC_TWO_PROCESS, "two_process"},
    {TB_SC_HEAP, "heap"}, {TB_SC_INSTRUCTIONS, "instructions"},
};

static void write_names(tb_json *j, const char *key, const tb_name *table) {
  tb_json_array(j, key);
  for (const tb_name *n = table; n->name != NULL; n++) tb_json_str(j, NULL, n->name);
  tb_json_array_end(j);
}

static int is_number(const tb_option *opt) { return opt->kind >= TB_ARG_INT; }

/* An option's value as JSON: a number for the numeric options, else the text. */
static void write_value(tb_json *j, const char *key, tb_option_id id, const char *value) {
  if (is_number(&tb_options_table[id])) {
    tb_json_i64(j, key, strtoll(value, NULL, 10));
  } else {
    tb_json_str(j, key, value);
  }
}

/* Numeric options by their names with underscores ("record_size"), as experiments spell
 * them. */
static void write_ranges(tb_json *j) {
  tb_json_object(j, "ranges");
  for (int id = 0; id < TB_N_OPTIONS; id++) {
    const tb_option *opt = &tb_options_table[id];
    if (!is_number(opt)) continue;
    char key[32];
    size_t i = 0;
    for (; opt->name[i] != '\0' && i + 1 < sizeof(key); i++)
      key[i] = opt->name[i] == '-' ? '_' : opt->name[i];
    key[i] = '\0';
    tb_json_object(j, key);
    tb_json_i64(j, "min", opt->min);
    tb_json_i64(j, "max", opt->max);
    tb_json_object_end(j);
  }
  tb_json_object_end(j);
}

/* Every option: who takes it (all, tls or the scenarios named), its choices and default. */
static void write_options(tb_json *j) {
  static const char *const scopes[] = {"all", "tls", "named", "named"};
  tb_json_array(j, "options");
  for (int id = 0; id < TB_N_OPTIONS; id++) {
    const tb_option *opt = &tb_options_table[id];
    tb_json_object(j, NULL);
    tb_json_str(j, "name", opt->name);
    tb_json_str(j, "scope", scopes[opt->scope]);
    tb_json_bool(j, "value", opt->kind != TB_ARG_FLAG);
    if (opt->choices != NULL) {
      tb_json_array(j, "choices");
      for (const tb_choice *c = opt->choices; c->name != NULL; c++) tb_json_str(j, NULL, c->name);
      tb_json_array_end(j);
    }
    if (opt->fallback != NULL) write_value(j, "default", (tb_option_id)id, opt->fallback);
    tb_json_object_end(j);
  }
  tb_json_array_end(j);
}

static void write_scenario(tb_json *j, const tb_scenario *s) {
  tb_json_object(j, NULL);
  tb_json_str(j, "name", s->name);
  tb_json_str(j, "summary", s->summary);
  tb_json_object(j, "flags");
  for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
    tb_json_bool(j, flag_names[i].name, (s->flags & flag_names[i].flag) != 0);
  tb_json_object_end(j);
  tb_json_array(j, "options");
  for (const tb_option_id *id = s->options; *id != TB_OPT_END; id++)
    tb_json_str(j, NULL, tb_options_table[*id].name);
  tb_json_array_end(j);
  tb_json_object(j, "defaults");
  for (const tb_default *d = s->defaults; d->value != NULL; d++)
    write_value(j, tb_options_table[d->option].name, d->option, d->value);
  tb_json_object_end(j);
  tb_json_array(j, "series");
  for (const tb_series_decl *d = s->series; d->name != NULL; d++) {
    tb_json_object(j, NULL);
    tb_json_str(j, "name", d->name);
    tb_json_str(j, "unit", d->unit);
    if (d->when != NULL) tb_json_str(j, "when", d->when);
    tb_json_object_end(j);
  }
  tb_json_array_end(j);
  tb_json_object_end(j);
}

void tb_write_declared(tb_json *j, const tb_scenario *const *registry) {
  tb_json_object(j, "declared");
  tb_json_array(j, "scenarios");
  for (const tb_scenario *const *s = registry; *s; s++) tb_json_str(j, NULL, (*s)->name);
  tb_json_array_end(j);
  tb_json_array(j, "suites");
  for (const tb_name *n = tb_suite_names; n->name != NULL; n++) {
    tb_json_object(j, NULL);
    tb_json_str(j, "name", n->name);
    tb_json_u64(j, "code", n->code);
    tb_json_str(j, "tls", n->tls == 13 ? "1.3" : "1.2");
    tb_json_object_end(j);
  }
  tb_json_array_end(j);
  write_names(j, "groups", tb_group_names);
  write_names(j, "sigalgs", tb_sigalg_names);
  write_names(j, "aeads", tb_aead_names);
  write_names(j, "certs", tb_cert_kinds);
  write_ranges(j);
  tb_json_array(j, "scenario_table");
  for (const tb_scenario *const *s = registry; *s; s++) write_scenario(j, *s);
  tb_json_array_end(j);
  write_options(j);
  tb_json_object_end(j);
}
