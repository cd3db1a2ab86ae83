/* The run's record: where it failed, its series of samples, its warnings; and the small
 * helpers every scenario uses. Calls nothing of the core but the heap side tag. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "scenario.h"

tb_status tb_fail(char *err, tb_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, TB_ERR_LEN, fmt, ap);
  va_end(ap);
  return status;
}

int tb_fail_stage(tb_run *r, int code, const char *stage) {
  snprintf(r->stage, sizeof(r->stage), "%s", stage);
  return code;
}

int tb_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tlsbench-driver: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return -1;
}

tb_series *tb_series_get(tb_run *r, const char *name) {
  for (int i = 0; i < r->n_series; i++) {
    if (strcmp(r->series[i].name, name) == 0) return &r->series[i];
  }
  const tb_series_decl *decl = r->scenario->series;
  while (decl->name != NULL && strcmp(decl->name, name) != 0) decl++;
  if (decl->name == NULL) {
    snprintf(r->err, sizeof(r->err), "series %s is not declared by the %s scenario", name,
             r->scenario->name);
    return NULL;
  }
  if (r->n_series == TB_MAX_SERIES) return NULL;
  tb_series *s = &r->series[r->n_series++];
  memset(s, 0, sizeof(*s));
  s->name = decl->name;
  s->unit = decl->unit;
  return s;
}

int tb_series_add(tb_series *s, double value) {
  if (s == NULL) return -1;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
    double *grown = realloc(s->values, cap * sizeof(double));
    tb_heap_set_side(side);
    if (grown == NULL) return -1;
    s->values = grown;
    s->cap = cap;
  }
  s->values[s->n++] = value;
  return 0;
}

void tb_warn(tb_run *r, const char *warning) {
  if (r->n_warnings < TB_MAX_WARNINGS) r->warnings[r->n_warnings++] = warning;
}

unsigned char *tb_harness_alloc(size_t len) {
  tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
  unsigned char *p = malloc(len ? len : 1);
  tb_heap_set_side(side);
  return p;
}

void tb_harness_free(void *p) {
  tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
  free(p);
  tb_heap_set_side(side);
}

/* The adapters' read-back state (driver.h): the harness's memory, zeroed. */
void *tb_readback_alloc(size_t len) {
  tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
  void *p = calloc(1, len ? len : 1);
  tb_heap_set_side(side);
  return p;
}

void tb_readback_free(void *p) { tb_harness_free(p); }

void tb_readback_call(void (*fn)(void *arg), void *arg) {
  tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
  fn(arg);
  tb_heap_set_side(side);
}

double tb_ticks_to_ns(const tb_run *r, uint64_t ticks) { return (double)ticks * 1e9 / r->tsc_hz; }
