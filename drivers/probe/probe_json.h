/* Tiny JSON writer shared by the build probes: one object of key/value pairs on stdout. */
#ifndef TLSBENCH_PROBE_JSON_H
#define TLSBENCH_PROBE_JSON_H

#include <stdio.h>

static int probe_first = 1;

static void probe_sep(void) {
  fputs(probe_first ? "{\n  " : ",\n  ", stdout);
  probe_first = 0;
}

static void probe_escaped(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      printf("\\%c", c);
    } else if (c < 0x20) {
      printf("\\u%04x", c);
    } else {
      putchar(c);
    }
  }
  putchar('"');
}

static void probe_str(const char *key, const char *value) {
  probe_sep();
  probe_escaped(key);
  fputs(": ", stdout);
  if (value) {
    probe_escaped(value);
  } else {
    fputs("null", stdout);
  }
}

static void probe_long(const char *key, long value) {
  probe_sep();
  probe_escaped(key);
  printf(": %ld", value);
}

static void probe_bool(const char *key, int value) {
  probe_sep();
  probe_escaped(key);
  fputs(value ? ": true" : ": false", stdout);
}

static void probe_end(void) { fputs(probe_first ? "{}\n" : "\n}\n", stdout); }

#endif
