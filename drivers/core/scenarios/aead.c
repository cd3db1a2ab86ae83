/* The aead scenario: the library's own AEAD API, checked against published vectors
 * before it is timed. A wrong answer is an error (exit 6), never a figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

typedef struct known_answer {
  tb_aead_alg alg;
  const char *name;
  const char *source;
  const char *key, *nonce, *ad, *plaintext, *ciphertext_and_tag; /* hex */
} known_answer;

#define GCM_PT                                                                             \
  "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e" \
  "2449a6b525b16aedf5aa0de657ba637b39"
#define GCM_AD "feedfacedeadbeeffeedfacedeadbeefabaddad2"
#define GCM_IV "cafebabefacedbaddecaf888"

static const known_answer vectors[] = {
    {TB_AES_128_GCM, "AES-128-GCM", "McGrew & Viega, GCM test case 4",
     "feffe9928665731c6d6a8f9467308308", GCM_IV, GCM_AD, GCM_PT,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5a"
     "ac84aa051ba30b396a0aac973d58e091"
     "5bc94fbc3221a5db94fae95ae7121a47"},
    {TB_AES_256_GCM, "AES-256-GCM", "McGrew & Viega, GCM test case 16",
     "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", GCM_IV, GCM_AD, GCM_PT,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b10"
     "56828838c5f61e6393ba7a0abcc9f662"
     "76fc6ece0f4e1768cddf8853bb2d551b"},
    {TB_CHACHA20_POLY1305, "ChaCha20-Poly1305", "RFC 8439 section 2.8.2",
     "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f", "070000004041424344454647",
     "50515253c0c1c2c3c4c5c6c7",
     /* "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the
        future, sunscreen would be it." */
     "4c616469657320616e642047656e746c656d656e206f662074686520636c617373206f66202739393a204966"
     "204920636f756c64206f6666657220796f75206f6e6c79206f6e652074697020666f7220746865206675747572"
     "652c2073756e73637265656e20776f756c642062652069742e",
     "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69"
     "da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad67594"
     "5585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116"
     "1ae10b594f09e26a7e902ecbd0600691"},
};

static const size_t payload_sizes[] = {16, 256, 1350, 16384};
#define AD_LEN 12

static size_t unhex(const char *hex, unsigned char *out) {
  size_t n = strlen(hex) / 2;
  for (size_t i = 0; i < n; i++) {
    unsigned int byte;
    sscanf(hex + 2 * i, "%2x", &byte);
    out[i] = (unsigned char)byte;
  }
  return n;
}

/* Seal and open the published vector; 0 when both give exactly the published bytes. */
static int check_vector(tb_run *r, const known_answer *v) {
  unsigned char key[32], nonce[12], ad[32], pt[128], expect[160], out[160], back[128];
  size_t key_len = unhex(v->key, key);
  unhex(v->nonce, nonce);
  size_t ad_len = unhex(v->ad, ad), pt_len = unhex(v->plaintext, pt);
  unhex(v->ciphertext_and_tag, expect);
  void *aead = NULL;
  tb_status st = TB_ON(TB_SIDE_CLIENT, r->ad->aead->create(v->alg, key, key_len, &aead, r->err));
  if (st == TB_UNSUPPORTED) return tb_fail_stage(r, TB_EXIT_UNSUPPORTED, v->name);
  if (st != TB_OK) return tb_fail_stage(r, TB_EXIT_HANDSHAKE, v->name);
  int code = TB_EXIT_OK;
  st = TB_ON(TB_SIDE_CLIENT, r->ad->aead->seal(aead, nonce, ad, ad_len, pt, pt_len, out, r->err));
  if (st != TB_OK || memcmp(out, expect, pt_len + TB_AEAD_TAG_LEN) != 0) {
    if (st == TB_OK)
      snprintf(r->err, sizeof(r->err), "%s: sealed bytes differ from %s", v->name, v->source);
    code = tb_fail_stage(r, TB_EXIT_DATA, "aead known answer (seal)");
  }
  if (code == TB_EXIT_OK) {
    st = TB_ON(TB_SIDE_CLIENT,
               r->ad->aead->open(aead, nonce, ad, ad_len, expect, pt_len, back, r->err));
    if (st != TB_OK || memcmp(back, pt, pt_len) != 0) {
      if (st == TB_OK)
        snprintf(r->err, sizeof(r->err), "%s: opened bytes differ from %s", v->name, v->source);
      code = tb_fail_stage(r, TB_EXIT_DATA, "aead known answer (open)");
    }
  }
  if (code == TB_EXIT_OK) {
    /* A flipped tag bit must be rejected. */
    expect[pt_len] ^= 1;
    st = TB_ON(TB_SIDE_CLIENT,
               r->ad->aead->open(aead, nonce, ad, ad_len, expect, pt_len, back, r->err));
    if (st == TB_OK) {
      snprintf(r->err, sizeof(r->err), "%s: a forged tag was accepted", v->name);
      code = tb_fail_stage(r, TB_EXIT_DATA, "aead known answer (forged tag)");
    }
  }
  TB_ON(TB_SIDE_CLIENT, (r->ad->aead->free(aead), TB_OK));
  return code;
}

/* Each timed region holds a batch of operations long enough that the TSC's coarse steps
 * (about 10 ns on some virtual machines) are a small part of it: at least this many TSC
 * cycles. Figures are per operation (the region's cycles / batch size). */
#define MIN_REGION_CYCLES 20000.0
#define MAX_BATCH 4096

typedef struct op_figures {
  tb_summary s; /* TSC cycles per operation, one sample per batch */
} op_figures;

static void nonce_for(unsigned char nonce[12], uint64_t n) {
  memset(nonce, 0, 12);
  for (int b = 0; b < 8; b++) nonce[11 - b] = (unsigned char)(n >> (8 * b));
}

/* Times `batches` regions of `batch` seals (open = 0, a fresh nonce each) or opens of one
 * sealed message (open = 1, tag checked each time). */
static int time_batches(tb_run *r, void *aead, int open, size_t batch, long batches,
                        const unsigned char *ad, unsigned char *in, size_t len, unsigned char *out,
                        double *per_op, uint64_t *counter) {
  unsigned char nonce[12];
  tb_status st = TB_OK;
  for (long b = 0; b < batches; b++) {
    tb_collect_measuring(per_op != NULL);
    tb_collect(TB_SIDE_CLIENT);
    uint64_t t0 = tb_tsc();
    for (size_t k = 0; k < batch && st == TB_OK; k++) {
      if (open) {
        nonce_for(nonce, 0);
        st = r->ad->aead->open(aead, nonce, ad, AD_LEN, out, len, in, r->err);
      } else {
        nonce_for(nonce, ++*counter); /* never the same nonce twice */
        st = r->ad->aead->seal(aead, nonce, ad, AD_LEN, in, len, out, r->err);
      }
    }
    uint64_t t1 = tb_tsc();
    tb_collect(TB_SIDE_CLIENT);
    tb_collect_measuring(0);
    if (st != TB_OK) return tb_fail_stage(r, TB_EXIT_HANDSHAKE, open ? "aead open" : "aead seal");
    if (per_op) per_op[b] = (double)tb_tsc_net(t1 - t0) / (double)batch;
  }
  return TB_EXIT_OK;
}

static void write_op(tb_json *j, tb_run *r, const char *prefix, const tb_summary *s, size_t len) {
  char key[48];
  snprintf(key, sizeof(key), "%stsc_cycles_per_byte", prefix);
  tb_json_double(j, key, s->median / (double)len);
  snprintf(key, sizeof(key), "%sns_per_byte", prefix);
  tb_json_double(j, key, s->median * 1e9 / r->tsc_hz / (double)len);
  snprintf(key, sizeof(key), "%sMBps", prefix);
  tb_json_double(j, key, (double)len / (s->median / r->tsc_hz) / 1e6);
  snprintf(key, sizeof(key), "%smedian_tsc_cycles", prefix);
  tb_json_double(j, key, s->median);
  snprintf(key, sizeof(key), "%smean_tsc_cycles", prefix);
  tb_json_double(j, key, s->mean);
  snprintf(key, sizeof(key), "%smin_tsc_cycles", prefix);
  tb_json_double(j, key, s->min);
  snprintf(key, sizeof(key), "%sp99_tsc_cycles", prefix);
  tb_json_double(j, key, s->p99);
}

static int measure(tb_run *r, tb_json *j, const known_answer *v, size_t len) {
  unsigned char key[32], nonce[12], ad[AD_LEN];
  size_t key_len = unhex(v->key, key);
  memset(ad, 0xad, sizeof(ad));
  long n = r->opt->iterations;
  tb_side prev = tb_heap_set_side(TB_SIDE_HARNESS);
  unsigned char *in = calloc(1, len + TB_AEAD_TAG_LEN), *out = malloc(len + TB_AEAD_TAG_LEN);
  double *seal = malloc(sizeof(double) * (size_t)n), *open = malloc(sizeof(double) * (size_t)n);
  tb_heap_set_side(prev);
  if (in == NULL || out == NULL || seal == NULL || open == NULL) {
    return tb_fail_stage(r, TB_EXIT_ERROR, "buf");
  }
  void *aead = NULL;
  uint64_t counter = 0;
  int code = TB_EXIT_OK;
  tb_status st = TB_ON(TB_SIDE_CLIENT, r->ad->aead->create(v->alg, key, key_len, &aead, r->err));
  if (st != TB_OK) code = tb_fail_stage(r, TB_EXIT_HANDSHAKE, v->name);
  /* The batch size, from one probe region of 8 seals after the warm-up. */
  size_t batch = 1;
  if (code == TB_EXIT_OK) {
    code = time_batches(r, aead, 0, 1, r->opt->warmup, ad, in, len, out, NULL, &counter);
  }
  if (code == TB_EXIT_OK) {
    double probe[1];
    code = time_batches(r, aead, 0, 8, 1, ad, in, len, out, probe, &counter);
    double per_op = probe[0] > 1 ? probe[0] : 1;
    double wanted = MIN_REGION_CYCLES / per_op;
    batch = wanted < 1 ? 1 : wanted > MAX_BATCH ? MAX_BATCH : (size_t)wanted + 1;
  }
  if (code == TB_EXIT_OK) {
    code = time_batches(r, aead, 0, batch, n, ad, in, len, out, seal, &counter);
  }
  /* Open: one message sealed under nonce 0 (so `out` holds ciphertext || tag), opened
   * into `in` again and again; each open checks the tag. */
  if (code == TB_EXIT_OK) {
    nonce_for(nonce, 0);
    st = r->ad->aead->seal(aead, nonce, ad, AD_LEN, in, len, out, r->err);
    if (st != TB_OK) code = tb_fail_stage(r, TB_EXIT_HANDSHAKE, "aead seal");
  }
  if (code == TB_EXIT_OK) {
    code = time_batches(r, aead, 1, batch, n, ad, in, len, out, open, &counter);
  }
  TB_ON(TB_SIDE_CLIENT, (r->ad->aead->free(aead), TB_OK));
  if (code == TB_EXIT_OK) {
    tb_summary s, o;
    tb_summarize(seal, (size_t)n, &s);
    tb_summarize(open, (size_t)n, &o);
    tb_json_object(j, NULL);
    tb_json_str(j, "aead", v->name);
    tb_json_u64(j, "payload", len);
    tb_json_u64(j, "ad", AD_LEN);
    tb_json_u64(j, "runs", s.n);
    tb_json_u64(j, "batch", batch); /* operations per timed region */
    write_op(j, r, "", &s, len);    /* seal (encrypt + tag) */
    write_op(j, r, "open_", &o, len);
    tb_json_object_end(j);
    if (!r->opt->json) {
      fprintf(stderr, "%-18s %6zu B  seal %8.2f  open %8.2f TSC cycles/B  (batches of %zu)\n",
              v->name, len, s.median / (double)len, o.median / (double)len, batch);
    }
  }
  prev = tb_heap_set_side(TB_SIDE_HARNESS);
  free(in);
  free(out);
  free(seal);
  free(open);
  tb_heap_set_side(prev);
  return code;
}

static int run(tb_run *r, tb_json *j) {
  int matched = 0;
  for (size_t v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
    if (r->opt->aead && strcmp(r->opt->aead, vectors[v].name) != 0) continue;
    matched = 1;
    int code = check_vector(r, &vectors[v]);
    if (code != TB_EXIT_OK) return code;
  }
  if (!matched) {
    snprintf(r->err, sizeof(r->err),
             "unknown --aead %s (AES-128-GCM, AES-256-GCM, "
             "ChaCha20-Poly1305)",
             r->opt->aead);
    return tb_fail_stage(r, TB_EXIT_USAGE, "options");
  }
  tb_json_array(j, "aead");
  int code = TB_EXIT_OK;
  /* --payload measures that one size; otherwise the four standard sizes. */
  const size_t *sizes = payload_sizes;
  size_t n_sizes = sizeof(payload_sizes) / sizeof(size_t);
  if (r->opt->payload) {
    sizes = &r->opt->payload;
    n_sizes = 1;
  }
  for (size_t v = 0; code == TB_EXIT_OK && v < sizeof(vectors) / sizeof(vectors[0]); v++) {
    if (r->opt->aead && strcmp(r->opt->aead, vectors[v].name) != 0) continue;
    for (size_t p = 0; code == TB_EXIT_OK && p < n_sizes; p++) {
      code = measure(r, j, &vectors[v], sizes[p]);
    }
  }
  tb_json_array_end(j);
  return code;
}

static const tb_option_id options[] = {TB_OPT_AEAD, TB_OPT_PAYLOAD, TB_OPT_END};
static const tb_default defaults[] = {
    {TB_OPT_ITERATIONS, "3000"}, {TB_OPT_WARMUP, "300"}, {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{NULL, NULL, NULL}};

const tb_scenario tb_scenario_aead = {
    .name = "aead",
    .summary =
        "the library's own AEAD API (not TLS): seal and open per payload size with a "
        "12-byte AD, after published known answers; results under \"aead\"",
    .flags = TB_SC_INSTRUCTIONS,
    .options = options,
    .defaults = defaults,
    .series = series,
    .run = run,
};
