/* The driver's output around a scenario's own: the parameters of the run, and after it what
 * was negotiated, put on the wire, allocated and sampled (JSON with --json, else a few
 * lines of text). */
#ifndef TLSBENCH_OUTPUT_H
#define TLSBENCH_OUTPUT_H

#include "scenario.h"

/* "params": what the run asked for (the scenario's own entries after the common ones). */
void tb_write_params(tb_json *j, const tb_scenario *s, const tb_options *o);
/* "negotiated", "wire", "heap", "samples" and "summary" of a run that succeeded. */
void tb_write_results(tb_json *j, const tb_run *r);
/* The same, shortly, as text on stdout (without --json). */
void tb_print_text(const tb_run *r);

#endif /* TLSBENCH_OUTPUT_H */
