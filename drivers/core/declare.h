/* What the driver accepts, as `info --json` declares it under "declared": the runner
 * validates experiments against it before running anything (src/tlsbench/scenarios.py). */
#ifndef TLSBENCH_DECLARE_H
#define TLSBENCH_DECLARE_H

#include "scenario.h"

/* The names (names.c), the ranges and choices of the options (options.c) and every
 * scenario of `registry` with its flags, options, defaults and series. */
void tb_write_declared(tb_json *j, const tb_scenario *const *registry);

#endif /* TLSBENCH_DECLARE_H */
