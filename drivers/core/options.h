/*
 * The driver's options: one table (options.c) from which the command line (cmdline.c), the
 * usage text, the output's parameters and the `info --json` declaration are all made, so
 * that none of them can say something the others do not.
 */
#ifndef TLSBENCH_OPTIONS_H
#define TLSBENCH_OPTIONS_H

#include "core.h"

/* Who takes an option. */
typedef enum tb_option_scope {
  TB_FOR_ALL,      /* every scenario */
  TB_FOR_TLS,      /* every scenario that runs TLS (the others accept and ignore it) */
  TB_FOR_NAMED,    /* the scenarios that list it; any other refuses it (a usage error) */
  TB_FOR_NAMED_OR, /* the scenarios that list it; the others accept and ignore it, as
                      they always have (callers pass --peer-timeout to serve, say) */
} tb_option_scope;

/* How an option's value is read into its field of tb_options. */
typedef enum tb_option_kind {
  TB_ARG_FLAG,   /* no value: the int field becomes 1 */
  TB_ARG_TEXT,   /* any text: a const char * field */
  TB_ARG_NAME,   /* a name of one of the core's tables (names.c): a const char * field */
  TB_ARG_CHOICE, /* one of `choices`: its value into an int field */
  TB_ARG_INT,    /* a whole number in [min, max], into an int field */
  TB_ARG_LONG,   /* ... a long field */
  TB_ARG_SIZE,   /* ... a size_t field */
  TB_ARG_U64,    /* ... a uint64_t field */
} tb_option_kind;

typedef struct tb_choice {
  const char *name;
  int value;
} tb_choice;

typedef struct tb_option {
  const char *name; /* without the leading -- */
  const char *arg;  /* what the value is, for the usage text ("N", "HOST:PORT"); NULL for
                       a flag, or generated from `choices` */
  tb_option_kind kind;
  tb_option_scope scope;
  size_t offset; /* of the field in tb_options */
  long min, max; /* whole numbers */
  const tb_choice *choices;
  const tb_name *names; /* TB_ARG_NAME: the table the name must be in */
  const char *fallback; /* the value when neither the user nor the scenario sets one */
  const char *help;     /* one sentence or two, wrapped by the usage text */
} tb_option;

extern const tb_option tb_options_table[TB_N_OPTIONS];

/* The name of a choice option's value (e.g. TB_OPT_TLS, 13 -> "1.3"); NULL if none. */
const char *tb_choice_name(tb_option_id id, int value);

#endif /* TLSBENCH_OPTIONS_H */
