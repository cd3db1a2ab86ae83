/* A streaming JSON writer: the driver's only output format for machines. */
#ifndef TLSBENCH_JSON_H
#define TLSBENCH_JSON_H

#include <stdint.h>
#include <stdio.h>

#define TB_JSON_MAX_DEPTH 16

typedef struct tb_json {
  FILE *out;
  int depth;
  int first[TB_JSON_MAX_DEPTH]; /* no element written yet at this depth */
} tb_json;

void tb_json_init(tb_json *j, FILE *out);
/* `key` is NULL inside arrays and at the top level. */
void tb_json_object(tb_json *j, const char *key);
void tb_json_object_end(tb_json *j);
void tb_json_array(tb_json *j, const char *key);
void tb_json_array_end(tb_json *j);
void tb_json_str(tb_json *j, const char *key, const char *value); /* NULL -> null */
void tb_json_u64(tb_json *j, const char *key, uint64_t value);
void tb_json_i64(tb_json *j, const char *key, int64_t value);
void tb_json_double(tb_json *j, const char *key, double value);
void tb_json_bool(tb_json *j, const char *key, int value);
void tb_json_null(tb_json *j, const char *key);

#endif /* TLSBENCH_JSON_H */
