/*
 * A scenario is data plus one run function: one `const tb_scenario` per file under
 * scenarios/, listed once in scenarios/registry.c. Nothing else in the core names a
 * scenario: the command line, the usage text, the JSON parameters and `info --json` read
 * these entries (the model: rustls ci-bench's `Benchmark { name, kind, params }`).
 */
#ifndef TLSBENCH_SCENARIO_H
#define TLSBENCH_SCENARIO_H

#include "core.h"

/* What kind of run a scenario is; the generic option rules and the output follow these. */
enum {
  /* Runs TLS: takes the TLS options and certificates, reports what was negotiated. */
  TB_SC_TLS = 1 << 0,
  /* Client and server of every connection in this process, pumped in lockstep. */
  TB_SC_ONE_PROCESS = 1 << 1,
  /* Takes --transport tcp: the two sides joined by a loopback TCP connection. */
  TB_SC_TCP = 1 << 2,
  /* One side here, the other in another process (a driver or a real program), over TCP. */
  TB_SC_TWO_PROCESS = 1 << 3,
  /* The heap driver (tlsbench-driver-heap) reports heap figures worth a run of their own. */
  TB_SC_HEAP = 1 << 4,
  /* Deterministic mode: under callgrind, only its measured calls are counted. */
  TB_SC_INSTRUCTIONS = 1 << 5,
};

/* A series of samples the scenario may emit: its name, unit and, when it is not always
 * there, the condition ("--role client", "heap driver"). */
typedef struct tb_series_decl {
  const char *name;
  const char *unit;
  const char *when;
} tb_series_decl;

/* A scenario's default for an option, as it would be written on the command line. */
typedef struct tb_default {
  tb_option_id option;
  const char *value;
} tb_default;

struct tb_scenario {
  const char *name;
  const char *summary; /* one line, for --help and `info --json` */
  unsigned flags;      /* TB_SC_* */
  /* The options it takes beyond those for every scenario (and, with TB_SC_TLS, the TLS
   * options), ended by TB_OPT_END. */
  const tb_option_id *options;
  const tb_default *defaults;   /* ended by {TB_OPT_END, NULL} */
  const tb_series_decl *series; /* ended by {NULL}; tb_series_get refuses any other */
  /* Its own option rules, after the generic ones: 0, or -1 after a message on stderr (a
   * usage error). May set values that follow from others. NULL: none. */
  int (*check)(tb_options *o);
  /* Its own entries of the output's "params", after the common ones. NULL: none. */
  void (*params)(tb_json *j, const tb_options *o);
  /* Runs it: samples into the run's series, anything else into `j` (the output object
   * being written); returns a TB_EXIT_* code. */
  int (*run)(tb_run *r, tb_json *j);
};

/* Every scenario, NULL-terminated (scenarios/registry.c). */
extern const tb_scenario *const tb_scenarios[];

/* The scenario's default for `option`, or NULL. */
const char *tb_scenario_default(const tb_scenario *s, tb_option_id option);
/* Whether the scenario lists `option` among those it takes. */
int tb_scenario_takes(const tb_scenario *s, tb_option_id option);

#endif /* TLSBENCH_SCENARIO_H */
