/* Every scenario, in the order --help and `info --json` list them. A scenario is one file
 * in this folder defining `const tb_scenario tb_scenario_<name>` and one line here. */
#include "scenario.h"

#define SCENARIOS(X) \
  X(handshake)       \
  X(resume)          \
  X(records)         \
  X(connections)     \
  X(bulk)            \
  X(aead)            \
  X(info)            \
  X(peer)            \
  X(serve)           \
  X(load)

#define DECLARE(name) extern const tb_scenario tb_scenario_##name;
#define ENTRY(name) &tb_scenario_##name,

SCENARIOS(DECLARE)

const tb_scenario *const tb_scenarios[] = {SCENARIOS(ENTRY) NULL};
