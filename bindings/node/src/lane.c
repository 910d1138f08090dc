/* The call lane: one thread per JS environment that runs store calls without the libuv pool's
 * hand-offs. A short call through the pool paid two thread wake-ups (the pool thread's, then the
 * event loop's) and ran the engine on a cold core: 70-110 µs for a 20 µs lookup. Here both sides
 * stay awake for a short while (SYNCSTORE_NODE_SPIN_US: default 100 µs, or 0 = off when the
 * process may use only one CPU, where a spinning side only delays the other: 270 µs a lookup
 * instead of 80): the lane thread watches for the next call before it sleeps, and while a call
 * is in flight the event loop polls instead of sleeping (an idle handle: the loop keeps running
 * timers and I/O, it only does not block). A call that finds the lane busy goes to the libuv
 * pool, so a slow call never queues the others behind it. Results come back through a
 * thread-safe function that keeps the process alive only while a call is in flight. */
#include "addon.h"
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

typedef struct lane_job {
    lane_fn run, drop;
    lane_done_fn done;
    void *data;
} lane_job;

struct lane {
    env_state *owner;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic(lane_job *) job;
    atomic_int busy;     /* a job is queued or running: new calls go to the pool */
    atomic_int sleeping; /* the thread waits on cv (no longer spinning) */
    atomic_int stop;
    napi_threadsafe_function tsfn;
    long spin_ns;
    /* JS thread only: */
    int pending;         /* calls whose completion has not run */
    uint64_t submitted;  /* when the last call was queued */
    uv_idle_t *poll;     /* active: the event loop polls for results instead of sleeping */
    napi_async_cleanup_hook_handle cleanup;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* CPUs this process may run on: with one, a spinning side would only delay the other. */
static long usable_cpus(void) {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
#endif
    return sysconf(_SC_NPROCESSORS_ONLN);
}

static lane_job *next_job(struct lane *l) {
    lane_job *job = NULL;
    uint64_t until = now_ns() + (uint64_t)l->spin_ns;
    for (unsigned i = 0; l->spin_ns > 0; i++) {
        if ((job = atomic_load(&l->job)) || atomic_load(&l->stop)) return job;
        if ((i & 63) == 0 && now_ns() > until) break;
        cpu_relax();
    }
    pthread_mutex_lock(&l->mu);
    /* sleeping is set before job is read again and the submitter stores job before it reads
     * sleeping (both sequentially consistent): one of the two always sees the other. */
    atomic_store(&l->sleeping, 1);
    while (!(job = atomic_load(&l->job)) && !atomic_load(&l->stop)) pthread_cond_wait(&l->cv, &l->mu);
    atomic_store(&l->sleeping, 0);
    pthread_mutex_unlock(&l->mu);
    return job;
}

static void *lane_main(void *arg) {
    struct lane *l = arg;
    for (;;) {
        lane_job *job = next_job(l);
        if (!job) return NULL; /* stopped with nothing queued */
        atomic_store(&l->job, NULL);
        job->run(job->data);
        atomic_store(&l->busy, 0);
        if (napi_call_threadsafe_function(l->tsfn, job, napi_tsfn_nonblocking) != napi_ok) {
            job->drop(job->data); /* the environment is going away */
            free(job);
        }
    }
}

static void on_poll(uv_idle_t *poll) {
    struct lane *l = poll->data;
    if (l->pending == 0 || now_ns() - l->submitted > (uint64_t)l->spin_ns) uv_idle_stop(poll);
}

static void lane_call_js(napi_env env, napi_value fn, void *context, void *data) {
    (void)fn;
    struct lane *l = context;
    lane_job *job = data;
    if (!env) { /* the function is being torn down: nobody to complete for */
        job->drop(job->data);
        free(job);
        return;
    }
    if (--l->pending == 0) {
        napi_unref_threadsafe_function(env, l->tsfn);
        uv_idle_stop(l->poll);
    }
    job->done(env, job->data);
    free(job);
}

static void lane_cleanup(napi_async_cleanup_hook_handle handle, void *arg);

static struct lane *lane_start(env_state *es) {
    napi_env env = es->env;
    uv_loop_t *loop = NULL;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || !loop) return NULL;
    struct lane *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->owner = es;
    l->poll = calloc(1, sizeof *l->poll);
    if (!l->poll) {
        free(l);
        return NULL;
    }
    const char *spin = getenv("SYNCSTORE_NODE_SPIN_US");
    long us = spin && *spin ? strtol(spin, NULL, 10) : usable_cpus() > 1 ? 100 : 0;
    l->spin_ns = (us < 0 ? 0 : us > 100000 ? 100000 : us) * 1000;
    napi_value name;
    napi_create_string_utf8(env, "syncstore lane", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, l, NULL, l, lane_call_js, &l->tsfn) != napi_ok) {
        free(l->poll);
        free(l);
        return NULL;
    }
    napi_unref_threadsafe_function(env, l->tsfn);
    uv_idle_init(loop, l->poll);
    l->poll->data = l;
    uv_unref((uv_handle_t *)l->poll); /* only the in-flight calls keep the process alive */
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (pthread_create(&l->thread, NULL, lane_main, l) != 0) {
        napi_release_threadsafe_function(l->tsfn, napi_tsfn_abort);
        uv_close((uv_handle_t *)l->poll, (uv_close_cb)free);
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        free(l);
        return NULL;
    }
    /* Torn down before the stores close (hooks run in reverse order of registration). */
    napi_add_async_cleanup_hook(env, lane_cleanup, l, &l->cleanup);
    return l;
}

int lane_submit(env_state *es, lane_fn run, lane_done_fn done, lane_fn drop, void *data) {
    if (!es->lane && !es->lane_failed) {
        es->lane = lane_start(es);
        es->lane_failed = es->lane == NULL;
    }
    struct lane *l = es->lane;
    if (!l || atomic_exchange(&l->busy, 1)) return 0;
    lane_job *job = malloc(sizeof *job);
    if (!job) {
        atomic_store(&l->busy, 0);
        return 0;
    }
    *job = (lane_job){run, drop, done, data};
    if (l->pending++ == 0) napi_ref_threadsafe_function(es->env, l->tsfn);
    l->submitted = now_ns();
    if (l->spin_ns > 0) uv_idle_start(l->poll, on_poll);
    atomic_store(&l->job, job);
    if (atomic_load(&l->sleeping)) {
        pthread_mutex_lock(&l->mu);
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
    }
    return 1;
}

static void poll_closed(uv_handle_t *poll) {
    struct lane *l = poll->data;
    napi_async_cleanup_hook_handle cleanup = l->cleanup;
    free(poll);
    free(l);
    napi_remove_async_cleanup_hook(cleanup);
}

/* Environment teardown: the lane thread finishes the call it runs (its store is still open),
 * then stops; the poll handle closes on the loop. */
static void lane_cleanup(napi_async_cleanup_hook_handle handle, void *arg) {
    (void)handle;
    struct lane *l = arg;
    l->owner->lane = NULL;
    l->owner->lane_failed = 1;
    atomic_store(&l->stop, 1);
    pthread_mutex_lock(&l->mu);
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    /* Completions still queued are dropped (lane_call_js without an environment). */
    napi_release_threadsafe_function(l->tsfn, napi_tsfn_abort);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    uv_idle_stop(l->poll);
    uv_close((uv_handle_t *)l->poll, poll_closed);
}
