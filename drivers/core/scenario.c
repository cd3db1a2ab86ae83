/* Questions about a scenario's declaration (scenario.h). */
#include "scenario.h"

const char *tb_scenario_default(const tb_scenario *s, tb_option_id option) {
  for (const tb_default *d = s->defaults; d->value != NULL; d++) {
    if (d->option == option) return d->value;
  }
  return NULL;
}

int tb_scenario_takes(const tb_scenario *s, tb_option_id option) {
  for (const tb_option_id *id = s->options; *id != TB_OPT_END; id++) {
    if (*id == option) return 1;
  }
  return 0;
}
