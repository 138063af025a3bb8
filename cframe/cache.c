/* cache.c: what pyframe remembers about code objects, per owner.
 *
 * A code object's state (in code-extra storage) holds, for each owner (a
 * pyframe.Cache; every callback installation has one), its remembered
 * decision (SKIP, SKIP_RECURSIVE, RUN_ONLY, RUN_ONLY_RECURSIVE) and its cached
 * replacements, most recently used first, at most the owner's limit of them.
 * Entries leave by that limit, by reset, by the death of an object they
 * depend on (a weak reference's callback), or with their owner; owners are
 * told of all but the last.  eval_frame.c reads the state on every frame.
 */
#include "cache.h"

Py_ssize_t pyframe_code_extra_index = -1;
static code_state all_states = {&all_states, &all_states, NULL, NULL, 0, 0, 0, 0, NULL};
static int cache_limit = 8;
static uint64_t last_owner_serial;
static uint64_t last_entry_id;
static PyObject *(*notify_owner)(PyObject *record);
static cache_user_python_listener user_python;
static void (*decisions_changed)(void);

/* ---- dropping entries ---------------------------------------------------- */

/* Moves one reference into the batch's release list; on failure leaks it
 * rather than release it while the cache is inconsistent. */
static void
batch_release(drop_batch *batch, PyObject *object)
{
    if (object == NULL) {
        return;
    }
    if ((batch->release == NULL && (batch->release = PyList_New(0)) == NULL)
            || PyList_Append(batch->release, object) < 0) {
        PyErr_Clear();
        return;
    }
    Py_DECREF(object);
}

/* Takes `entry` out of service: its references go to `batch`, and its owner
 * is told `reason` (unless `reason` is NULL).  The caller removes it from
 * the array. */
static void
entry_drop(code_state *state, cache_entry *entry, const char *reason, drop_batch *batch)
{
    PyObject *replacement = entry->runs_original ? (PyObject *)state->code : entry->code;
    if (reason != NULL && entry->owner->self != NULL) {
        PyObject *record = Py_BuildValue("(OOOOs)", entry->owner->self, state->code, replacement,
                                         entry->guard ? entry->guard : Py_None, reason);
        if (record == NULL || ((batch->notify == NULL && (batch->notify = PyList_New(0)) == NULL))
                || PyList_Append(batch->notify, record) < 0) {
            PyErr_Clear();   /* the owner is not told: out of memory */
        }
        Py_XDECREF(record);
    }
    if (!entry->runs_original) {
        batch_release(batch, entry->code);
    }
    batch_release(batch, entry->guard);
    batch_release(batch, entry->watchers);
    entry->code = entry->guard = entry->watchers = NULL;
}

/* Drops the entries of `state` made by `owner` (NULL: any) whose id is `id`
 * (0: any), keeping the order of the others. */
static void
state_drop_entries(code_state *state, pyframe_owner *owner, uint64_t id, const char *reason,
                   drop_batch *batch)
{
    int kept = 0;
    for (int i = 0; i < state->count; i++) {
        cache_entry *entry = &state->entries[i];
        int drop = (owner == NULL || entry->owner == owner) && (id == 0 || entry->id == id);
        if (drop) {
            entry_drop(state, entry, reason, batch);
        }
        else {
            state->entries[kept++] = *entry;
        }
    }
    if (kept != state->count) {
        state->count = kept;
        state->version++;
    }
}

static void
state_forget_decisions(code_state *state, uint64_t serial)
{
    int kept = 0;
    for (int i = 0; i < state->ndecisions; i++) {
        if (serial != 0 && state->decisions[i].serial != serial) {
            state->decisions[kept++] = state->decisions[i];
        }
    }
    state->ndecisions = kept;
}

void
drop_batch_finish(drop_batch *batch)
{
    PyObject *notify = batch->notify;     /* Owned. */
    PyObject *release = batch->release;   /* Owned. */

    batch->notify = batch->release = NULL;
    if (notify != NULL) {
        /* Whatever exception is set (a guard's) waits for the owners. */
        PyObject *pending = PyErr_GetRaisedException();
        user_python.user_python_enter();
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(notify); i++) {
            PyObject *record = PyList_GET_ITEM(notify, i);
            PyObject *result = notify_owner(record);
            if (result == NULL) {
                PyErr_WriteUnraisable(PyTuple_GET_ITEM(record, 0));
            }
            Py_XDECREF(result);
        }
        user_python.user_python_leave();
        PyErr_SetRaisedException(pending);
    }
    Py_XDECREF(notify);
    Py_XDECREF(release);
}

/* ---- per-code state ------------------------------------------------------ */

uint64_t cache_states_freed;

/* Called by CPython when the code object is freed.  No Python runs for the
 * owners here: the code is being deallocated. */
static void
code_state_free(void *opaque)
{
    code_state *state = opaque;
    if (state == NULL) {
        /* The code has extra storage for another user's index, not ours. */
        return;
    }
    state->prev->next = state->next;
    state->next->prev = state->prev;
    for (int i = 0; i < state->count; i++) {
        if (!state->entries[i].runs_original) {
            Py_DECREF(state->entries[i].code);
        }
        Py_XDECREF(state->entries[i].guard);
        Py_XDECREF(state->entries[i].watchers);
    }
    PyMem_RawFree(state->entries);
    PyMem_RawFree(state->decisions);
    PyMem_RawFree(state);
    cache_states_freed++;
}

code_state *
cache_state_get_or_create(PyCodeObject *code)
{
    code_state *state = cache_state_peek(code);
    if (state != NULL) {
        return state;
    }
    state = PyMem_RawCalloc(1, sizeof(code_state));
    if (state == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    state->code = code;
    state->next = all_states.next;
    state->prev = &all_states;
    all_states.next->prev = state;
    all_states.next = state;
    if (PyUnstable_Code_SetExtra((PyObject *)code, pyframe_code_extra_index, state) < 0) {
        code_state_free(state);
        return NULL;
    }
    return state;
}

int
cache_remember(code_state *state, uint64_t serial, int action)
{
    for (int i = 0; i < state->ndecisions; i++) {
        if (state->decisions[i].serial == serial) {
            state->decisions[i].action = action;
            return 0;
        }
    }
    cache_decision *grown = PyMem_RawRealloc(state->decisions,
                                             (state->ndecisions + 1) * sizeof(cache_decision));
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    state->decisions = grown;
    state->decisions[state->ndecisions++] = (cache_decision){serial, action};
    return 0;
}

/* ---- entries -------------------------------------------------------------- */

static PyObject *invalidate_entry(PyObject *self, PyObject *weakref);

static PyMethodDef invalidate_def = {
    "pyframe_invalidate_entry", invalidate_entry, METH_O,
    "Drops the pyframe cache entry named by self: an object it depends on died."};

/* Weak references to the objects an entry depends on, each calling
 * invalidate_entry with the entry's id when its referent dies.  New; NULL
 * with an exception (TypeError for an object that cannot be weakly
 * referenced). */
static PyObject *
make_watchers(PyObject *depends, uint64_t id)
{
    PyObject *key = NULL;        /* Owned. */
    PyObject *callback = NULL;   /* Owned: a C method whose self is the id. */
    PyObject *watchers = NULL;   /* Owned. */
    Py_ssize_t n = PyTuple_GET_SIZE(depends);

    if ((key = PyLong_FromUnsignedLongLong(id)) == NULL
            || (callback = PyCFunction_New(&invalidate_def, key)) == NULL
            || (watchers = PyTuple_New(n)) == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *watcher = PyWeakref_NewRef(PyTuple_GET_ITEM(depends, i), callback);
        if (watcher == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(watchers, i, watcher);
    }
    Py_DECREF(key);
    Py_DECREF(callback);
    return watchers;

error:
    Py_XDECREF(key);
    Py_XDECREF(callback);
    Py_XDECREF(watchers);
    return NULL;
}

int
cache_insert(code_state *state, pyframe_owner *owner, PyObject *code, PyObject *guard,
             PyObject *depends, int keeps_function, drop_batch *batch)
{
    int limit = owner->limit >= 0 ? owner->limit : cache_limit;
    int runs_original = code == (PyObject *)state->code;
    PyObject *watchers = NULL;   /* Owned. */
    uint64_t id = ++last_entry_id;
    int mine = 0;

    if (depends != NULL && PyTuple_GET_SIZE(depends) > 0
            && (watchers = make_watchers(depends, id)) == NULL) {
        goto error;
    }
    Py_CLEAR(depends);
    /* Past the limit, this owner's least recently used entries go (more
     * than one when the limit was lowered since they were cached). */
    for (int i = 0; i < state->count; i++) {
        mine += state->entries[i].owner == owner;
    }
    for (int i = state->count - 1; i >= 0 && mine >= (limit > 0 ? limit : 1); i--) {
        if (state->entries[i].owner == owner) {
            entry_drop(state, &state->entries[i], "limit", batch);
            memmove(&state->entries[i], &state->entries[i + 1],
                    (state->count - i - 1) * sizeof(cache_entry));
            state->count--;
            state->version++;
            mine--;
        }
    }
    if (limit <= 0) {
        /* Caching is off for this owner: not even the new one. */
        batch_release(batch, code);
        batch_release(batch, guard);
        batch_release(batch, watchers);
        return 0;
    }
    if (state->count == state->capacity) {
        int capacity = state->capacity ? state->capacity * 2 : 2;
        cache_entry *grown = PyMem_RawRealloc(state->entries, capacity * sizeof(cache_entry));
        if (grown == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        state->entries = grown;
        state->capacity = capacity;
    }
    if (runs_original) {
        /* The code is its own replacement: keep no reference to it, or the
         * code would keep itself alive through its own state. */
        batch_release(batch, code);
    }
    memmove(&state->entries[1], &state->entries[0], state->count * sizeof(cache_entry));
    state->entries[0] = (cache_entry){code, guard, watchers, owner, id, 0, keeps_function,
                                      runs_original, 0};
    state->count++;
    state->version++;
    return 0;

error:
    Py_DECREF(code);
    Py_XDECREF(guard);
    Py_XDECREF(depends);
    Py_XDECREF(watchers);
    return -1;
}

void
cache_move_to_front(code_state *state, int index)
{
    cache_entry hit = state->entries[index];
    memmove(&state->entries[1], &state->entries[0], index * sizeof(cache_entry));
    state->entries[0] = hit;
    state->version++;
}

/* The weak-reference callback: drops the entry whose id is `self`, wherever
 * it is.  Walking every state keeps it safe however long a weak reference
 * outlives its entry (weakref.getweakrefs() hands them out). */
static PyObject *
invalidate_entry(PyObject *self, PyObject *weakref)
{
    uint64_t id = PyLong_AsUnsignedLongLong(self);
    drop_batch batch = DROP_BATCH_INIT;

    if (id == (uint64_t)-1 && PyErr_Occurred()) {
        return NULL;
    }
    for (code_state *state = all_states.next; state != &all_states; state = state->next) {
        int before = state->count;
        state_drop_entries(state, NULL, id, "invalidated", &batch);
        if (state->count != before) {
            break;
        }
    }
    drop_batch_finish(&batch);
    Py_RETURN_NONE;
}

/* ---- owners ----------------------------------------------------------------- */

pyframe_owner *
pyframe_owner_new(PyObject *self, int limit)
{
    pyframe_owner *owner = PyMem_RawCalloc(1, sizeof(pyframe_owner));
    if (owner == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    owner->serial = ++last_owner_serial;
    owner->limit = limit;
    owner->self = self;
    return owner;
}

void
pyframe_owner_free(pyframe_owner *owner)
{
    drop_batch batch = DROP_BATCH_INIT;

    if (owner == NULL) {
        return;
    }
    owner->self = NULL;   /* no one to tell */
    for (code_state *state = all_states.next; state != &all_states; state = state->next) {
        state_drop_entries(state, owner, 0, NULL, &batch);
        state_forget_decisions(state, owner->serial);
    }
    PyMem_RawFree(owner);
    drop_batch_finish(&batch);
}

void
pyframe_owner_set_regions(pyframe_owner *owner, PyObject *lookup, PyObject *run)
{
    owner->lookup_region = lookup;
    owner->run_region = run;
}

/* ---- reset and inspection ------------------------------------------------- */

static void
tell_decisions_changed(void)
{
    if (decisions_changed != NULL) {
        decisions_changed();
    }
}

static void
state_reset(code_state *state, pyframe_owner *owner, drop_batch *batch)
{
    state_forget_decisions(state, owner != NULL ? owner->serial : 0);
    state_drop_entries(state, owner, 0, "reset", batch);
}

int
pyframe_reset_code(PyObject *code, pyframe_owner *owner)
{
    code_state *state = cache_state_peek((PyCodeObject *)code);
    drop_batch batch = DROP_BATCH_INIT;
    if (state != NULL) {
        state_reset(state, owner, &batch);
    }
    drop_batch_finish(&batch);
    tell_decisions_changed();   /* a SKIP may be gone */
    return 0;
}

int
pyframe_reset_all(pyframe_owner *owner)
{
    drop_batch batch = DROP_BATCH_INIT;
    for (code_state *state = all_states.next; state != &all_states; state = state->next) {
        state_reset(state, owner, &batch);
    }
    /* Releasing can run finalizers, and telling owners runs their Python:
     * only now, with every state consistent. */
    drop_batch_finish(&batch);
    tell_decisions_changed();
    return 0;
}

/* A decision made for the owner outside a callback: as if its callback had
 * returned `action` for a frame of the code (PYFRAME_RUN: forget it). */
int
pyframe_remember(PyObject *code, pyframe_owner *owner, int action)
{
    code_state *state;
    if (action == PYFRAME_RUN) {
        if ((state = cache_state_peek((PyCodeObject *)code)) != NULL) {
            state_forget_decisions(state, owner->serial);
        }
    }
    else if ((state = cache_state_get_or_create((PyCodeObject *)code)) == NULL
             || cache_remember(state, owner->serial, action) < 0) {
        return -1;
    }
    tell_decisions_changed();   /* a SKIP may have come or gone */
    return 0;
}

int
pyframe_remembered(PyObject *code, pyframe_owner *owner)
{
    code_state *state = cache_state_peek((PyCodeObject *)code);
    return state != NULL ? cache_decision_of(state, owner->serial) : PYFRAME_RUN;
}

int
pyframe_set_cache_limit(int limit)
{
    cache_limit = limit;
    return 0;
}

int
pyframe_get_cache_limit(void)
{
    return cache_limit;
}

PyObject *
pyframe_cache_entries(PyObject *code, pyframe_owner *owner)
{
    code_state *state = cache_state_peek((PyCodeObject *)code);
    PyObject *entries = PyList_New(0);
    for (int i = 0; entries != NULL && state != NULL && i < state->count; i++) {
        cache_entry *entry = &state->entries[i];
        if (owner != NULL && entry->owner != owner) {
            continue;
        }
        PyObject *row = Py_BuildValue("(OOn)", entry->runs_original ? code : entry->code,
                                      entry->guard ? entry->guard : Py_None, entry->hits);
        if (row == NULL || PyList_Append(entries, row) < 0) {
            Py_XDECREF(row);
            Py_CLEAR(entries);
            break;
        }
        Py_DECREF(row);
    }
    return entries;
}

void
cache_listen_decisions(void (*changed)(void))
{
    decisions_changed = changed;
}

int
cache_init(PyObject *(*notify)(PyObject *record), const cache_user_python_listener *listener)
{
    notify_owner = notify;
    user_python = *listener;
    if (pyframe_code_extra_index < 0) {
        pyframe_code_extra_index = PyUnstable_Eval_RequestCodeExtraIndex(code_state_free);
        if (pyframe_code_extra_index < 0) {
            PyErr_SetString(PyExc_RuntimeError, "pyframe: CPython has no code-extra index left");
            return -1;
        }
    }
    return 0;
}
