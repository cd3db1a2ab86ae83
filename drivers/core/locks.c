/*
 * Lock calls per side, by wrapping the pthread lock entry points in the driver itself.
 *
 * The driver executable defines pthread_mutex_lock, the read-write lock, once and condition
 * variable entry points; the linker resolves a static library's calls to these, and the
 * dynamic linker a shared library's (as heap.c does for malloc), and each forwards to
 * glibc's own, found with dlsym(RTLD_NEXT). Both drivers carry the wrappers, so
 * that the timing driver can count (--locks) and a run without --locks pays one
 * thread-local test per lock call.
 *
 * Contention: a counted lock is first tried (trylock); a try that finds the lock held is
 * counted as contended, then the call blocks as the library asked. Uncontended, the try
 * takes the lock exactly as the blocking call would. Atomics, futexes called directly
 * (Rust's std) and a library's own spin locks do not pass through here: docs/methodology.md
 * says which libraries that hides.
 *
 * Counters are per thread (no shared cache line between threads while they count) and
 * summed by tb_locks_take once a thread is done.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "tlsbench/measure.h"

const char *const tb_lock_kind_names[TB_LOCK_KINDS] = {"mutex", "rwlock_read", "rwlock_write",
                                                       "once",  "cond_wait",   "cond_signal"};

static _Thread_local int counting;
static _Thread_local tb_lock_counts counts[TB_SIDES];

void tb_locks_count(int on) { counting = on; }

void tb_locks_add(tb_lock_counts *to, const tb_lock_counts *from) {
  for (int s = 0; s < TB_SIDES; s++) {
    for (int k = 0; k < TB_LOCK_KINDS; k++) {
      to[s].calls[k] += from[s].calls[k];
      to[s].contended[k] += from[s].contended[k];
    }
  }
}

void tb_locks_take(tb_lock_counts *sides) {
  tb_locks_add(sides, counts);
  memset(counts, 0, sizeof(counts));
}

#if defined(__x86_64__) && defined(__GLIBC__)

const int tb_locks_available = 1;

/* glibc's own entry points, found once (the first lock call, or the constructor below,
 * whichever comes first): the default version of each symbol after this executable's, and
 * for condition variables the current one by name (x86-64 glibc keeps an old version of
 * them that takes another structure). */
static struct {
  int (*mutex_lock)(pthread_mutex_t *);
  int (*mutex_trylock)(pthread_mutex_t *);
  int (*rdlock)(pthread_rwlock_t *);
  int (*tryrdlock)(pthread_rwlock_t *);
  int (*wrlock)(pthread_rwlock_t *);
  int (*trywrlock)(pthread_rwlock_t *);
  int (*once)(pthread_once_t *, void (*)(void));
  int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
  int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
  int (*cond_signal)(pthread_cond_t *);
  int (*cond_broadcast)(pthread_cond_t *);
} glibc;

__attribute__((constructor(101))) static void resolve(void) {
  if (glibc.cond_broadcast != NULL) return;
  *(void **)&glibc.mutex_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
  *(void **)&glibc.mutex_trylock = dlsym(RTLD_NEXT, "pthread_mutex_trylock");
  *(void **)&glibc.rdlock = dlsym(RTLD_NEXT, "pthread_rwlock_rdlock");
  *(void **)&glibc.tryrdlock = dlsym(RTLD_NEXT, "pthread_rwlock_tryrdlock");
  *(void **)&glibc.wrlock = dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
  *(void **)&glibc.trywrlock = dlsym(RTLD_NEXT, "pthread_rwlock_trywrlock");
  *(void **)&glibc.once = dlsym(RTLD_NEXT, "pthread_once");
  *(void **)&glibc.cond_wait = dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2");
  *(void **)&glibc.cond_timedwait = dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
  *(void **)&glibc.cond_signal = dlvsym(RTLD_NEXT, "pthread_cond_signal", "GLIBC_2.3.2");
  *(void **)&glibc.cond_broadcast = dlvsym(RTLD_NEXT, "pthread_cond_broadcast", "GLIBC_2.3.2");
}

static void count(tb_lock_kind kind, int contended) {
  tb_side side = tb_heap_current_side;
  counts[side].calls[kind]++;
  counts[side].contended[kind] += (uint64_t)contended;
}

/* A blocking lock: tried first while counting, so that a held lock is seen. */
#define COUNTED_LOCK(kind, try_fn, lock_fn, lock)              \
  do {                                                         \
    if (__builtin_expect(glibc.lock_fn == NULL, 0)) resolve(); \
    if (!counting) return glibc.lock_fn(lock);                 \
    int rc_ = glibc.try_fn(lock);                              \
    count(kind, rc_ == EBUSY);                                 \
    return rc_ == EBUSY ? glibc.lock_fn(lock) : rc_;           \
  } while (0)

/* A try the library makes itself: EBUSY is its answer, and a contention. */
#define COUNTED_TRY(kind, try_fn, lock)                       \
  do {                                                        \
    if (__builtin_expect(glibc.try_fn == NULL, 0)) resolve(); \
    int rc_ = glibc.try_fn(lock);                             \
    if (counting) count(kind, rc_ == EBUSY);                  \
    return rc_;                                               \
  } while (0)

/* A call counted without contention. */
#define COUNTED_CALL(kind, fn, ...)                       \
  do {                                                    \
    if (__builtin_expect(glibc.fn == NULL, 0)) resolve(); \
    if (counting) count(kind, 0);                         \
    return glibc.fn(__VA_ARGS__);                         \
  } while (0)

int pthread_mutex_lock(pthread_mutex_t *m) {
  COUNTED_LOCK(TB_LOCK_MUTEX, mutex_trylock, mutex_lock, m);
}
int pthread_mutex_trylock(pthread_mutex_t *m) { COUNTED_TRY(TB_LOCK_MUTEX, mutex_trylock, m); }
int pthread_rwlock_rdlock(pthread_rwlock_t *l) { COUNTED_LOCK(TB_LOCK_READ, tryrdlock, rdlock, l); }
int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) { COUNTED_TRY(TB_LOCK_READ, tryrdlock, l); }
int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
  COUNTED_LOCK(TB_LOCK_WRITE, trywrlock, wrlock, l);
}
int pthread_rwlock_trywrlock(pthread_rwlock_t *l) { COUNTED_TRY(TB_LOCK_WRITE, trywrlock, l); }
int pthread_once(pthread_once_t *once, void (*init)(void)) {
  COUNTED_CALL(TB_LOCK_ONCE, once, once, init);
}
int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  COUNTED_CALL(TB_LOCK_WAIT, cond_wait, c, m);
}
int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t) {
  COUNTED_CALL(TB_LOCK_WAIT, cond_timedwait, c, m, t);
}
int pthread_cond_signal(pthread_cond_t *c) { COUNTED_CALL(TB_LOCK_SIGNAL, cond_signal, c); }
int pthread_cond_broadcast(pthread_cond_t *c) { COUNTED_CALL(TB_LOCK_SIGNAL, cond_broadcast, c); }

#else

/* Another architecture or C library: no wrappers, and --locks is refused (threads.c). */
const int tb_locks_available = 0;

#endif
