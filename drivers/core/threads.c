/*
 * --threads T: the measured iterations of handshake and resume in T threads at once, as a
 * multi-threaded server runs them (OpenSSL perftools' handshake tool, HAProxy's threads).
 *
 * Each thread is a copy of the run with its own link (memory pair or TCP), connections,
 * series and error; with --contexts shared (the default) every thread uses the run's one
 * client and one server context (and so the server's session cache or ticket keys), with
 * --contexts per-thread each thread makes its own pair first. The threads run their
 * warm-up, meet at a barrier, and run their measured iterations until the first of them has
 * done --iterations: then every thread stops at its next iteration, so that the measured
 * phase is one where all T run at once (perftools ends all its threads at one deadline
 * for the same reason; a fixed count per thread would end with the slowest thread alone).
 * Each notes when it started and ended; the total rate is every thread's handshakes over
 * the time from the first start to the last end. Every thread's connections are checked as a
 * one-thread run's are: one thread's failure is the run's.
 *
 * Per-thread figures are summed once the threads are joined, never while they run, so that
 * threads do not share a cache line through the harness (perftools does the same).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "scenario.h"

typedef struct tb_thread_group {
  pthread_barrier_t barrier;
  tb_thread_loop loop;
  int done; /* a thread has run its --iterations: the measured phase ends (atomic) */
} tb_thread_group;

struct tb_threads {
  tb_thread_group *group;
  tb_run run;
  pthread_t id;
  int met, code;
  uint64_t start_ns, end_ns;
  long measured;
};

int tb_check_threads(const tb_options *o) {
  if (o->locks && !tb_locks_available) {
    return tb_usage_error("--locks: this driver has no lock wrappers (x86-64 with glibc only)");
  }
  if (o->given[TB_OPT_THREADS] && getenv("TLSBENCH_COLLECT") != NULL) {
    return tb_usage_error(
        "--threads: instruction mode counts one thread's calls; run threads in time mode");
  }
  if (o->given[TB_OPT_CONTEXTS] && !o->given[TB_OPT_THREADS]) {
    return tb_usage_error("--contexts says what threads share: give --threads too");
  }
  return 0;
}

void tb_write_thread_params(tb_json *j, const tb_options *o) {
  if (o->given[TB_OPT_THREADS]) {
    tb_json_i64(j, "threads", o->threads);
    tb_json_str(j, "contexts", tb_choice_name(TB_OPT_CONTEXTS, o->contexts));
  }
  if (o->locks) tb_json_bool(j, "locks", 1);
}

void tb_measured_begin(tb_run *r) {
  if (r->threads != NULL) {
    pthread_barrier_wait(&r->threads->group->barrier);
    r->threads->met = 1;
    r->threads->start_ns = tb_mono_ns();
  }
  if (r->opt->locks) tb_locks_count(1);
}

int tb_measured_stop(const tb_run *r) {
  return r->threads != NULL && __atomic_load_n(&r->threads->group->done, __ATOMIC_RELAXED);
}

void tb_measured_end(tb_run *r, long iterations) {
  if (r->threads != NULL) {
    r->threads->end_ns = tb_mono_ns();
    r->threads->measured = iterations;
    __atomic_store_n(&r->threads->group->done, 1, __ATOMIC_RELAXED);
  }
  if (r->opt->locks) {
    tb_locks_count(0);
    tb_locks_take(r->locks);
    r->locked_iterations += (uint64_t)iterations;
  }
}

static void *work(void *arg) {
  struct tb_threads *t = arg;
  tb_run *r = &t->run;
  int own = r->opt->contexts == TB_CONTEXTS_PER_THREAD;
  t->code = tb_thread_setup(r, own);
  if (t->code == TB_EXIT_OK) t->code = t->group->loop(r);
  /* A thread that failed before its measured iterations still lets the others start. */
  if (!t->met) pthread_barrier_wait(&t->group->barrier);
  tb_locks_count(0);
  tb_thread_teardown(r, own);
  return NULL;
}

/* One thread's samples and lock counts into the run's. */
static int merge(tb_run *r, struct tb_threads *t) {
  for (int i = 0; i < t->run.n_series; i++) {
    tb_series *from = &t->run.series[i];
    tb_series *to = tb_series_get(r, from->name);
    for (size_t k = 0; k < from->n; k++) {
      if (tb_series_add(to, from->values[k]) != 0) return -1;
    }
    tb_harness_free(from->values);
  }
  tb_locks_add(r->locks, t->run.locks);
  r->locked_iterations += t->run.locked_iterations;
  return 0;
}

int tb_run_threads(tb_run *r, tb_thread_loop loop) {
  const tb_options *o = r->opt;
  if (!o->given[TB_OPT_THREADS]) {
    int code = loop(r);
    tb_locks_count(0);
    return code;
  }
  if (o->threads > 1 && r->no_threads[0] != '\0') {
    snprintf(r->err, sizeof(r->err), "%s", r->no_threads);
    return tb_fail_stage(r, TB_EXIT_UNSUPPORTED, "threads");
  }
  long n = o->threads;
  tb_thread_group group = {.loop = loop};
  struct tb_threads *threads = (struct tb_threads *)tb_harness_alloc(sizeof(*threads) * (size_t)n);
  if (threads == NULL) return tb_fail_stage(r, TB_EXIT_ERROR, "threads");
  memset(threads, 0, sizeof(*threads) * (size_t)n);
  /* The threads, and this one, which waits with them so that it cannot miss the start. */
  pthread_barrier_init(&group.barrier, NULL, (unsigned)n + 1);
  for (long i = 0; i < n; i++) {
    struct tb_threads *t = &threads[i];
    t->group = &group;
    t->run = *r;
    t->run.threads = t;
    t->run.n_series = 0;
    memset(t->run.series, 0, sizeof(t->run.series));
    memset(t->run.locks, 0, sizeof(t->run.locks));
    t->run.locked_iterations = 0;
    if (pthread_create(&t->id, NULL, work, t) != 0) {
      /* The threads started wait at a barrier that would never open: no way back. */
      fprintf(stderr, "tlsbench-driver: could start %ld of %ld threads\n", i, n);
      exit(TB_EXIT_ERROR);
    }
  }
  pthread_barrier_wait(&group.barrier);
  for (long i = 0; i < n; i++) pthread_join(threads[i].id, NULL);
  pthread_barrier_destroy(&group.barrier);

  int code = TB_EXIT_OK;
  uint64_t first = UINT64_MAX, last = 0;
  long handshakes = 0;
  for (long i = 0; i < n && code == TB_EXIT_OK; i++) {
    struct tb_threads *t = &threads[i];
    if (t->code != TB_EXIT_OK) {
      /* The first thread that failed speaks for the run, its words and its stage. */
      memcpy(r->err, t->run.err, sizeof(r->err));
      code = tb_fail_stage(r, t->code, t->run.stage);
      break;
    }
    if (merge(r, t) != 0) code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    if (t->start_ns < first) first = t->start_ns;
    if (t->end_ns > last) last = t->end_ns;
    handshakes += t->measured;
  }
  if (code == TB_EXIT_OK) {
    /* What thread 0 negotiated stands for all: each thread checked its own. */
    r->client_neg = threads[0].run.client_neg;
    r->server_neg = threads[0].run.server_neg;
    r->have_negotiated = threads[0].run.have_negotiated;
    tb_series *per_thread = tb_series_get(r, "thread_handshakes_per_s");
    tb_series *total = tb_series_get(r, "total_handshakes_per_s");
    for (long i = 0; i < n && code == TB_EXIT_OK; i++) {
      uint64_t took = threads[i].end_ns - threads[i].start_ns;
      if (tb_series_add(per_thread, 1e9 * (double)threads[i].measured / (double)(took ? took : 1)))
        code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
    uint64_t wall = last > first ? last - first : 1;
    if (code == TB_EXIT_OK && tb_series_add(total, 1e9 * (double)handshakes / (double)wall))
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
  }
  tb_harness_free(threads);
  return code;
}
