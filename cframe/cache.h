/* cache.h: what pyframe remembers about code objects, per owner (cache.c).
 *
 * Shared by cache.c, which keeps it, and eval_frame.c, which reads it on
 * every intercepted frame: the structures are visible so that the hook's
 * lookup walks them without a call per entry.
 *
 * Layer 3, above compat.h; what it must tell the layers above (user Python
 * is about to run, decisions changed) goes through the listeners they
 * register.
 */
#ifndef PYFRAME_CACHE_H
#define PYFRAME_CACHE_H

#include "compat.h"
#include "pyframe.h"

#pragma GCC visibility push(hidden)

/* One owner of decisions and cached entries: a pyframe.Cache.  Owners are
 * told apart by a serial number that is never reused, so a decision or an
 * entry can never be found by an owner that did not make it. */
struct pyframe_owner {
    uint64_t serial;
    int limit;          /* entries per code object; < 0: the global limit */
    PyObject *self;     /* Borrowed: the pyframe.Cache whose lifetime this is */
    /* Borrowed from `self` (Cache.set_regions), or NULL: what makes the
     * context managers entered around a frame's lookup and around running
     * an entry's code (eval_frame.c). */
    PyObject *lookup_region;
    PyObject *run_region;
    /* The threads that have it installed now (hook.c keeps the count): the
     * specialization mode steps aside while they are all the threads that
     * have anything installed, since then every frame is decided by it. */
    Py_ssize_t threads_installed;
};

/* A remembered decision of one owner about one code object. */
typedef struct {
    uint64_t serial;    /* the owner's */
    int action;         /* PYFRAME_SKIP, _SKIP_RECURSIVE, _RUN_ONLY or _RUN_ONLY_RECURSIVE */
} cache_decision;

typedef struct {
    /* The replacement: Owned, except in an entry that runs the original code
     * itself (runs_original), where it is the code this state belongs to,
     * Borrowed: an entry on a code object must not keep that object alive. */
    PyObject *code;
    PyObject *guard;        /* Owned; NULL: always valid. */
    PyObject *watchers;     /* Owned tuple of weak references, or NULL: their
                               referents dying drops the entry. */
    pyframe_owner *owner;   /* Borrowed: an owner drops its entries when freed. */
    uint64_t id;            /* names the entry to the weak-reference callbacks */
    Py_ssize_t hits;
    int keeps_function;     /* pyframe_keeps_function(original, code) */
    int runs_original;
    /* Whether `guard` is a pyframe.FastGuard, as eval_frame.c's lookup found
     * the first time it asked the entry: 0 not yet, else CACHE_GUARD_*. */
    int guard_kind;
} cache_entry;

enum { CACHE_GUARD_PLAIN = 1, CACHE_GUARD_FAST = 2 };

/* Per-code state, in code-extra storage; every one is on a list so that
 * reset and freed owners reach them all. */
typedef struct code_state {
    struct code_state *prev, *next;
    PyCodeObject *code;         /* Borrowed: the state is freed with it. */
    cache_decision *decisions;  /* PyMem_Raw; `ndecisions` long */
    int ndecisions;
    int count;                  /* entries in use, most recently used first */
    int capacity;
    uint64_t version;           /* bumped on every change to entries */
    cache_entry *entries;       /* PyMem_Raw; `capacity` long */
} code_state;

/* Entries taken out of the cache, whose references are released (and whose
 * owners are told) once the cache is consistent again: releasing can run
 * finalizers and telling runs the owner's Python. */
typedef struct {
    PyObject *release;   /* Owned list or NULL */
    PyObject *notify;    /* Owned list of (cache, original, replacement, guard, reason) or NULL */
} drop_batch;

#define DROP_BATCH_INIT {NULL, NULL}

/* What the cache tells the layers above; both set (cache_init). */
typedef struct {
    /* Around calls of owners' on_drop (hook.c: unseen by this thread's
     * callback and by tracers, as the callback's own calls are). */
    void (*user_python_enter)(void);
    void (*user_python_leave)(void);
} cache_user_python_listener;

/* `notify` tells an owner of a dropped entry (pyframe_layer.notify_dropped).
 * -1 with an exception. */
int cache_init(PyObject *(*notify)(PyObject *record), const cache_user_python_listener *listener);
/* Called after a decision was set or forgotten from outside a callback
 * (pyframe_remember, pyframe_reset_all): a SKIP may have come or gone.  The
 * specialization mode registers it while it is on; NULL: none. */
void cache_listen_decisions(void (*changed)(void));

/* Releases the batch's references and tells the owners, running their
 * Python: only once every code state is consistent. */
void drop_batch_finish(drop_batch *batch);

/* Borrowed; NULL (no exception) when the code has no state yet. */
static inline code_state *
cache_state_peek(PyCodeObject *code)
{
    extern Py_ssize_t pyframe_code_extra_index;
    void *state = NULL;
    if (code->co_extra == NULL) {
        return NULL;   /* no tool stored anything on it: the usual case */
    }
    if (PyUnstable_Code_GetExtra((PyObject *)code, pyframe_code_extra_index, &state) < 0) {
        PyErr_Clear();
        return NULL;
    }
    return state;
}

code_state *cache_state_get_or_create(PyCodeObject *code);

/* Counts the code states freed so far: a state pointer remembered together
 * with this count is still valid while the count is unchanged. */
extern uint64_t cache_states_freed;

/* The owner's remembered decision about the code, or PYFRAME_RUN. */
static inline int
cache_decision_of(code_state *state, uint64_t serial)
{
    for (int i = 0; i < state->ndecisions; i++) {
        if (state->decisions[i].serial == serial) {
            return state->decisions[i].action;
        }
    }
    return PYFRAME_RUN;
}

int cache_remember(code_state *state, uint64_t serial, int action);

/* Puts a new entry of `owner` first; steals `code`, `guard` and `depends`
 * (a tuple of objects whose death drops the entry, or NULL).  The owner's
 * least recently used entries past its limit go to `batch`. */
int cache_insert(code_state *state, pyframe_owner *owner, PyObject *code, PyObject *guard,
                 PyObject *depends, int keeps_function, drop_batch *batch);

void cache_move_to_front(code_state *state, int index);

#pragma GCC visibility pop

#endif /* PYFRAME_CACHE_H */
