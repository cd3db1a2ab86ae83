/* Streaming JSON writer. */
#include "tlsbench/json.h"

#include <inttypes.h>
#include <math.h>

void tb_json_init(tb_json *j, FILE *out) {
  j->out = out;
  j->depth = 0;
  j->first[0] = 1;
}

static void string(tb_json *j, const char *s) {
  fputc('"', j->out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      fprintf(j->out, "\\%c", c);
    } else if (c < 0x20) {
      fprintf(j->out, "\\u%04x", c);
    } else {
      fputc(c, j->out);
    }
  }
  fputc('"', j->out);
}

/* Separator, then the key if any. */
static void member(tb_json *j, const char *key) {
  if (!j->first[j->depth]) fputc(',', j->out);
  j->first[j->depth] = 0;
  if (key != NULL) {
    string(j, key);
    fputc(':', j->out);
  }
}

static void open(tb_json *j, const char *key, char bracket) {
  member(j, key);
  fputc(bracket, j->out);
  if (j->depth + 1 < TB_JSON_MAX_DEPTH) j->depth++;
  j->first[j->depth] = 1;
}

static void close_(tb_json *j, char bracket) {
  if (j->depth > 0) j->depth--;
  fputc(bracket, j->out);
  if (j->depth == 0) fputc('\n', j->out);
}

void tb_json_object(tb_json *j, const char *key) { open(j, key, '{'); }
void tb_json_object_end(tb_json *j) { close_(j, '}'); }
void tb_json_array(tb_json *j, const char *key) { open(j, key, '['); }
void tb_json_array_end(tb_json *j) { close_(j, ']'); }

void tb_json_str(tb_json *j, const char *key, const char *value) {
  member(j, key);
  if (value == NULL) {
    fputs("null", j->out);
  } else {
    string(j, value);
  }
}

void tb_json_u64(tb_json *j, const char *key, uint64_t value) {
  member(j, key);
  fprintf(j->out, "%" PRIu64, value);
}

void tb_json_i64(tb_json *j, const char *key, int64_t value) {
  member(j, key);
  fprintf(j->out, "%" PRId64, value);
}

void tb_json_double(tb_json *j, const char *key, double value) {
  member(j, key);
  if (isfinite(value)) {
    fprintf(j->out, "%.17g", value);
  } else {
    fputs("null", j->out);
  }
}

void tb_json_bool(tb_json *j, const char *key, int value) {
  member(j, key);
  fputs(value ? "true" : "false", j->out);
}

void tb_json_null(tb_json *j, const char *key) {
  member(j, key);
  fputs("null", j->out);
}
