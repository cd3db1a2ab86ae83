/*
 * tlsbench-driver: runs one scenario against the one library linked in, and prints what
 * it measured (JSON with --json). Exit codes: see core.h (and the README).
 *
 * main reads the command line (cmdline.c), looks the scenario up in the registry
 * (scenarios/registry.c), writes what every run reports around the scenario's own output
 * (output.c) and runs it; it names no scenario.
 */
#include <stdio.h>
#include <string.h>

#include "cmdline.h"
#include "output.h"

#define SCHEMA_VERSION 1

/* What every output has before the scenario runs: the run's identity and parameters. */
static void write_head(tb_json *j, const tb_run *r) {
  tb_json_object(j, NULL);
  tb_json_u64(j, "schema", SCHEMA_VERSION);
  /* Which kind of run this is: "time" (no accounting in the allocation path) or "heap". */
  tb_json_str(j, "measure", tb_heap_accounting ? "heap" : "time");
  tb_json_str(j, "variant", r->opt->variant);
  tb_json_str(j, "library", r->ad->name);
  tb_json_str(j, "scenario", r->scenario->name);
  tb_write_params(j, r->scenario, r->opt);
}

/* --deterministic: the library draws from the core's fixed stream (or keeps its own
 * randomness, where its work does not depend on it); what was done goes into the output. */
static int derandomize(tb_run *r, tb_json *j) {
  if (r->ad->derandomize == NULL) {
    tb_fail(r->err, TB_UNSUPPORTED, "the %s adapter has no randomness hook", r->ad->name);
    return tb_fail_stage(r, TB_EXIT_UNSUPPORTED, "deterministic randomness");
  }
  tb_randomness randomness;
  memset(&randomness, 0, sizeof(randomness));
  tb_status st = TB_ON(TB_SIDE_GLOBAL, r->ad->derandomize(tb_fixed_random, &randomness, r->err));
  if (st != TB_OK) return tb_fail_stage(r, tb_status_exit(st), "deterministic randomness");
  tb_json_object(j, "randomness");
  tb_json_bool(j, "seeded", randomness.seeded);
  tb_json_str(j, "how", randomness.how);
  tb_json_object_end(j);
  return TB_EXIT_OK;
}

/* Once per process: the library's own set-up, charged to "global", and the facts it
 * reports of itself. */
static int start_library(tb_run *r, tb_json *j) {
  tb_heap_reset_peak(TB_SIDES);
  if (r->opt->deterministic) {
    /* Before global_init: some hooks must be in place before the library seeds itself. */
    int code = derandomize(r, j);
    if (code != TB_EXIT_OK) return code;
  }
  tb_status st = TB_ON(TB_SIDE_GLOBAL, r->ad->global_init(r->err));
  tb_heap_get(TB_SIDE_GLOBAL, &r->heap_global);
  if (st != TB_OK) return tb_fail_stage(r, tb_status_exit(st), "global init");
  tb_info info;
  memset(&info, 0, sizeof(info));
  if (TB_ON(TB_SIDE_GLOBAL, r->ad->info(&info, r->err)) == TB_OK) {
    tb_json_str(j, "version", info.version);
    if (info.no_threads != NULL)
      snprintf(r->no_threads, sizeof(r->no_threads), "%s", info.no_threads);
  }
  if (r->ad->cpu_paths != NULL) {
    char paths[512] = "";
    r->ad->cpu_paths(paths, sizeof(paths));
    tb_json_str(j, "cpu_paths", paths);
  }
  return TB_EXIT_OK;
}

/* What every output has after the scenario ran: the clocks, then the results or the
 * error, the warnings and the exit code. */
static void write_tail(tb_json *j, const tb_run *r, double calibration_before_ns, int code) {
  tb_json_object(j, "calibration");
  tb_json_str(j, "workload", tb_calibration_workload);
  tb_json_double(j, "before_ns", calibration_before_ns);
  tb_json_double(j, "after_ns", tb_calibration_ns(r->tsc_hz));
  tb_json_object_end(j);
  tb_json_double(j, "tsc_hz", r->tsc_hz);
  tb_json_u64(j, "tsc_overhead_cycles", tb_tsc_overhead());
  /* The resolution of one TSC sample (single-record latencies are multiples of it), and
   * the thread-CPU-clock cost subtracted from every per-call CPU interval. */
  tb_json_double(j, "tsc_step_ns", (double)tb_tsc_step() * 1e9 / r->tsc_hz);
  tb_json_u64(j, "thread_cpu_overhead_ns", tb_thread_cpu_overhead());
  tb_json_str(j, "collect", tb_collect_mode());
  if (code == TB_EXIT_OK) {
    tb_write_results(j, r);
  } else {
    /* A failed run reports no sample: only what failed, where, and the library's words. */
    tb_json_object(j, "error");
    tb_json_str(j, "stage", r->stage);
    tb_json_str(j, "message", r->err);
    tb_json_object_end(j);
  }
  tb_json_array(j, "warnings");
  for (int i = 0; i < r->n_warnings; i++) tb_json_str(j, NULL, r->warnings[i]);
  tb_json_array_end(j);
  tb_json_i64(j, "exit", code);
  tb_json_object_end(j);
}

int main(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    tb_usage(stdout, tb_scenarios);
    return TB_EXIT_OK;
  }
  tb_options opt;
  const tb_scenario *scenario = NULL;
  if (tb_parse_options(argc, argv, tb_scenarios, &opt, &scenario) != 0) {
    fprintf(stderr, "tlsbench-driver: --help lists the scenarios and options\n");
    return TB_EXIT_USAGE;
  }
  tb_run run;
  memset(&run, 0, sizeof(run));
  run.ad = &tb_adapter_impl;
  run.opt = &opt;
  run.scenario = scenario;
  run.registry = tb_scenarios;
  run.tsc_hz = tb_tsc_hz();
  (void)tb_tsc_overhead(); /* calibrated before anything is measured */
  (void)tb_thread_cpu_overhead();
  (void)tb_tsc_step();
  tb_collect_init();
  double calibration_before_ns = tb_calibration_ns(run.tsc_hz);
  if (strcmp(run.ad->name, "null") == 0)
    tb_warn(&run, "null adapter: no TLS, the harness baseline");

  /* In text mode the JSON goes nowhere; the same code path runs either way. */
  FILE *json_out = opt.json ? stdout : fopen("/dev/null", "w");
  tb_json j;
  tb_json_init(&j, json_out);
  write_head(&j, &run);
  int code = tb_check_allocator(&run, &j);
  if (code == TB_EXIT_OK) code = start_library(&run, &j);
  if (code == TB_EXIT_OK) code = scenario->run(&run, &j);
  tb_teardown(&run);
  write_tail(&j, &run, calibration_before_ns, code);
  if (!opt.json) {
    fclose(json_out);
    if (code == TB_EXIT_OK) tb_print_text(&run);
  }
  if (code != TB_EXIT_OK) {
    fprintf(stderr, "tlsbench-driver: %s failed (exit %d): %s\n", run.stage, code, run.err);
  }
  TB_ON(TB_SIDE_GLOBAL, (run.ad->global_cleanup(), TB_OK));
  return code;
}
