/* Reading the command line (cmdline.c). */
#ifndef TLSBENCH_CMDLINE_H
#define TLSBENCH_CMDLINE_H

#include <stdio.h>

#include "options.h"
#include "scenario.h"

/* Reads argv into *o and finds the scenario in `registry` (NULL-terminated): defaults
 * applied, every option checked (the generic rules, then the scenario's own check).
 * Returns 0, or -1 after a message on stderr (a usage error). */
int tb_parse_options(int argc, char **argv, const tb_scenario *const *registry, tb_options *o,
                     const tb_scenario **scenario);

/* The --help text, made from the option table and the registry. */
void tb_usage(FILE *out, const tb_scenario *const *registry);

#endif /* TLSBENCH_CMDLINE_H */
