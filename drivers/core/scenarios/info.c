/* info: what the library reports of its build (version, options, what it can negotiate),
 * and what this driver accepts ("declared"). Measures nothing. */
#include <string.h>

#include "declare.h"
#include "scenario.h"

static const tb_option_id options[] = {TB_OPT_END};
static const tb_default defaults[] = {
    {TB_OPT_ITERATIONS, "1"}, {TB_OPT_WARMUP, "0"}, {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{NULL, NULL, NULL}};

static void string_list(tb_json *j, const char *key, const char *const *items) {
  tb_json_array(j, key);
  for (; items && *items; items++) tb_json_str(j, NULL, *items);
  tb_json_array_end(j);
}

static int run(tb_run *r, tb_json *j) {
  tb_info info;
  memset(&info, 0, sizeof(info));
  tb_status st = TB_ON(TB_SIDE_GLOBAL, r->ad->info(&info, r->err));
  int code = st == TB_OK ? TB_EXIT_OK : tb_fail_stage(r, TB_EXIT_HANDSHAKE, "info");
  if (code == TB_EXIT_OK) {
    tb_json_object(j, "info");
    tb_json_str(j, "version", info.version);
    string_list(j, "build_options", info.build_options);
    string_list(j, "versions", info.versions);
    string_list(j, "suites", info.suites);
    string_list(j, "groups", info.groups);
    string_list(j, "sigalgs", info.sigalgs);
    if (info.no_tls != NULL) tb_json_str(j, "no_tls", info.no_tls);
    tb_json_object_end(j);
  }
  tb_write_declared(j, r->registry);
  return code;
}

const tb_scenario tb_scenario_info = {
    .name = "info",
    .summary =
        "the library's version and build facts, and what this driver accepts "
        "(\"declared\": names, ranges, scenarios)",
    .flags = 0,
    .options = options,
    .defaults = defaults,
    .series = series,
    .run = run,
};
