/* offconv._speedups: the per-event loop of perf_script.sum_blocks in C (optional).
 *
 * count_blocks(pieces, i, heads, stacks, raw, frames, names, budget, line_cache)
 *     -> (stop, counted, budget)
 *
 * Counts plain on-CPU samples with tab-indented callchains, pieces[i], pieces[i+1], ...,
 * into ``raw`` exactly as sum_blocks' Python loop does: under the key
 *   (heads[(header[:ts.start()], header[ts.end():])], _leaf_key(leaf), callers)
 * where ts is the first match of ` \d+\.\d+: ` (a header without one is its own key)
 * and stops at the first block it does not take whole: a block that is not ASCII, whose
 * header is not a plain sample's (empty, starting with a space, a tab or '#', naming
 * "sched", not yet in ``heads``), whose body does not
 * start with a tab, whose leaf line is blank, or whose callers' text is not yet in
 * ``stacks`` and whose frame lines are not all in ``frames`` or ``names`` (body_stack),
 * or when ``budget`` (characters of callers' text ``stacks`` may still take) is spent.
 * Python handles that block (it fills the caches) and calls again after it.
 * Returns the index of that block (len(pieces) at the end) and the number of events
 * counted. The keys are the same Python objects' values that the Python loop builds, so
 * the sums and their first-seen order are the same with or without this module
 * (tests/test_sum_blocks.py runs every case both ways).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static PyObject *empty; /* "" */
static PyObject *one;   /* 1 (a count, and one_line_events' head keys) */

static inline int
is_digit(Py_UCS1 c)
{
    return c >= '0' && c <= '9';
}

static inline int
is_hex(Py_UCS1 c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* str.strip()'s whitespace among ASCII characters */
static inline int
is_space(Py_UCS1 c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* The leftmost match of the regex " (\d+)\.(\d+): " in s[0:n] (ASCII: \d is [0-9]; each
 * \d+ is followed by a non-digit, so a start has one match or none): its start, and its
 * end in *end; -1 when there is none. */
static Py_ssize_t
ts_search(const Py_UCS1 *s, Py_ssize_t n, Py_ssize_t *end)
{
    const Py_UCS1 *p = s, *stop = s + n;
    while (p < stop) {
        p = memchr(p, ' ', stop - p);
        if (p == NULL)
            return -1;
        const Py_UCS1 *q = p + 1;
        if (q < stop && is_digit(*q)) {
            while (q < stop && is_digit(*q))
                q++;
            if (q < stop && *q == '.' && q + 1 < stop && is_digit(q[1])) {
                q++;
                while (q < stop && is_digit(*q))
                    q++;
                if (q + 1 < stop && q[0] == ':' && q[1] == ' ') {
                    *end = (q + 2) - s;
                    return p - s;
                }
            }
        }
        p++;
    }
    return -1;
}

/* The leaf key of s[a:b] (a tab-indented frame line, sum_blocks' _leaf_key): a new
 * reference, or NULL with *skip = 1 (a blank line: Python takes the block) or an error. */
static PyObject *
leaf_key(PyObject *block, const Py_UCS1 *s, Py_ssize_t a, Py_ssize_t b, int *skip)
{
    while (a < b && is_space(s[a]))
        a++;
    while (b > a && is_space(s[b - 1]))
        b--;
    if (a == b) {
        *skip = 1;
        return NULL;
    }
    /* rest = s.partition(" ")[2] */
    const Py_UCS1 *sp = memchr(s + a, ' ', b - a);
    Py_ssize_t r = sp ? (sp - s) + 1 : b;
    /* k = rest.rfind("+0x") */
    Py_ssize_t k = -1;
    for (Py_ssize_t j = b - 3; j >= r; j--) {
        if (s[j] == '+' && s[j + 1] == '0' && s[j + 2] == 'x') {
            k = j;
            break;
        }
    }
    if (k >= 0) {
        /* _offset_key: hex digits after "+0x", then " (dso)" ending the line, with no
         * other '(' and its first ')' last */
        Py_ssize_t t = k + 3;
        while (t < b && is_hex(s[t]))
            t++;
        if (t > k + 3 && b - t >= 2 && s[t] == ' ' && s[t + 1] == '(' && s[b - 1] == ')') {
            int ok = 1;
            for (Py_ssize_t j = t + 2; j < b - 1; j++) {
                if (s[j] == '(' || s[j] == ')') {
                    ok = 0;
                    break;
                }
            }
            if (ok) {
                PyObject *sym = PyUnicode_Substring(block, r, k);
                if (sym == NULL)
                    return NULL;
                PyObject *tail = PyUnicode_Substring(block, t, b);
                if (tail == NULL) {
                    Py_DECREF(sym);
                    return NULL;
                }
                PyObject *key = PyTuple_Pack(2, sym, tail);
                Py_DECREF(sym);
                Py_DECREF(tail);
                return key;
            }
        }
    }
    return PyUnicode_Substring(block, r, b);
}

/* _body_stack of s[a:b] (a callchain's frame lines, leaf first) -> its root-first frames,
 * from the caches alone: each line is in ``frames``, or starts with a tab and the text
 * after its address (the second word of the stripped line) is in ``names`` (the line is
 * then added to ``frames`` while it holds fewer than line_cache). A new reference, or NULL
 * with *skip = 1 when a line is in neither (Python parses it: _body_stack), or an error. */
static PyObject *
body_stack(PyObject *block, const Py_UCS1 *s, Py_ssize_t a, Py_ssize_t b, PyObject *frames,
           PyObject *names, Py_ssize_t line_cache, int *skip)
{
    PyObject *groups = PyList_New(0);
    if (groups == NULL)
        return NULL;
    Py_ssize_t total = 0;
    Py_ssize_t p = a;
    for (;;) {
        const Py_UCS1 *nl = memchr(s + p, '\n', b - p);
        Py_ssize_t e = nl ? nl - s : b;
        PyObject *line = PyUnicode_Substring(block, p, e);
        if (line == NULL)
            goto error;
        PyObject *g = PyDict_GetItemWithError(frames, line);
        if (g == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(line);
                goto error;
            }
            Py_ssize_t x = p, y = e;
            if (x == y || s[x] != '\t') {
                Py_DECREF(line);
                goto skip;
            }
            while (x < y && is_space(s[x]))
                x++;
            while (y > x && is_space(s[y - 1]))
                y--;
            const Py_UCS1 *sp = x < y ? memchr(s + x, ' ', y - x) : NULL;
            PyObject *key = sp ? PyUnicode_Substring(block, (sp - s) + 1, y)
                               : (Py_INCREF(empty), empty);
            if (x == y || key == NULL) {
                Py_DECREF(line);
                Py_XDECREF(key);
                if (x == y)
                    goto skip;
                goto error;
            }
            g = PyDict_GetItemWithError(names, key);
            Py_DECREF(key);
            if (g == NULL) {
                Py_DECREF(line);
                if (PyErr_Occurred())
                    goto error;
                goto skip;
            }
            if (PyDict_GET_SIZE(frames) < line_cache && PyDict_SetItem(frames, line, g) < 0) {
                Py_DECREF(line);
                goto error;
            }
        }
        Py_DECREF(line);
        if (!PyTuple_CheckExact(g))
            goto skip;
        total += PyTuple_GET_SIZE(g);
        if (PyList_Append(groups, g) < 0)
            goto error;
        if (nl == NULL)
            break;
        p = e + 1;
    }
    PyObject *out = PyTuple_New(total);
    if (out == NULL)
        goto error;
    Py_ssize_t k = 0;
    for (Py_ssize_t j = PyList_GET_SIZE(groups) - 1; j >= 0; j--) {
        PyObject *g = PyList_GET_ITEM(groups, j);
        for (Py_ssize_t m = 0; m < PyTuple_GET_SIZE(g); m++) {
            PyObject *f = PyTuple_GET_ITEM(g, m);
            Py_INCREF(f);
            PyTuple_SET_ITEM(out, k++, f);
        }
    }
    Py_DECREF(groups);
    return out;
skip:
    *skip = 1;
error:
    Py_DECREF(groups);
    return NULL;
}

static PyObject *
count_blocks(PyObject *self, PyObject *args)
{
    PyObject *pieces, *heads, *stacks, *raw, *frames, *names;
    Py_ssize_t i, counted = 0, budget, line_cache;
    if (!PyArg_ParseTuple(args, "O!nO!O!O!O!O!nn", &PyList_Type, &pieces, &i, &PyDict_Type,
                          &heads, &PyDict_Type, &stacks, &PyDict_Type, &raw, &PyDict_Type,
                          &frames, &PyDict_Type, &names, &budget, &line_cache))
        return NULL;
    if (i < 0)
        i = 0;
    /* the last header's entry: its block, its text before and after the timestamp */
    const Py_UCS1 *last = NULL;
    Py_ssize_t last_ts = 0, last_te = 0, last_hlen = 0;
    PyObject *last_e = NULL; /* borrowed from heads, which this call does not change */
    Py_ssize_t n = PyList_GET_SIZE(pieces);
    for (; i < n; i++) {
        PyObject *block = PyList_GET_ITEM(pieces, i);
        if (!PyUnicode_CheckExact(block) || !PyUnicode_IS_ASCII(block))
            break;
        const Py_UCS1 *s = PyUnicode_1BYTE_DATA(block);
        Py_ssize_t len = PyUnicode_GET_LENGTH(block);
        const Py_UCS1 *nl = memchr(s, '\n', len);
        Py_ssize_t hlen = nl ? nl - s : len;
        Py_ssize_t body = nl ? hlen + 1 : len;
        if (hlen == 0 || s[0] == ' ' || s[0] == '\t' || s[0] == '#')
            break;
        if (body < len && s[body] != '\t')
            break;
        if (memmem(s, hlen, "sched", 5) != NULL)
            break;
        /* without a timestamp (older perfs), the header is its own key */
        Py_ssize_t te = hlen, ts = ts_search(s, hlen, &te);
        if (ts < 0)
            ts = hlen;
        PyObject *e;
        if (last != NULL && ts == last_ts && hlen - te == last_hlen - last_te
            && memcmp(s, last, ts) == 0 && memcmp(s + te, last + last_te, hlen - te) == 0) {
            e = last_e;
        }
        else {
            PyObject *hk = ts == hlen ? PyUnicode_Substring(block, 0, hlen)
                                      : Py_BuildValue("(NN)", PyUnicode_Substring(block, 0, ts),
                                                      PyUnicode_Substring(block, te, hlen));
            if (hk == NULL)
                goto error;
            e = PyDict_GetItemWithError(heads, hk);
            Py_DECREF(hk);
            if (e == NULL) {
                if (PyErr_Occurred())
                    goto error;
                break;
            }
            last = s;
            last_ts = ts;
            last_te = te;
            last_hlen = hlen;
            last_e = e;
        }
        PyObject *key;
        if (body >= len) {
            key = Py_BuildValue("(OOO)", e, Py_None, empty);
        }
        else {
            const Py_UCS1 *nl2 = memchr(s + body, '\n', len - body);
            Py_ssize_t leaf_end = nl2 ? nl2 - s : len;
            Py_ssize_t callers = nl2 ? leaf_end + 1 : len;
            int skip = 0;
            PyObject *lk = leaf_key(block, s, body, leaf_end, &skip);
            if (lk == NULL) {
                if (skip)
                    break;
                goto error;
            }
            PyObject *cs = PyUnicode_Substring(block, callers, len);
            if (cs == NULL) {
                Py_DECREF(lk);
                goto error;
            }
            if (callers < len) {
                int has = PyDict_Contains(stacks, cs);
                if (has < 0) {
                    Py_DECREF(lk);
                    Py_DECREF(cs);
                    goto error;
                }
                if (!has) {
                    /* a new callchain: its frames from the caches, unless the cache of
                     * callchains is full (Python empties it, after a flush) */
                    PyObject *st = NULL;
                    skip = budget <= 0;
                    if (!skip)
                        st = body_stack(block, s, callers, len, frames, names, line_cache, &skip);
                    if (st == NULL || PyDict_SetItem(stacks, cs, st) < 0) {
                        Py_XDECREF(st);
                        Py_DECREF(lk);
                        Py_DECREF(cs);
                        if (skip)
                            break;
                        goto error;
                    }
                    Py_DECREF(st);
                    budget -= len - callers;
                }
            }
            key = PyTuple_Pack(3, e, lk, cs);
            Py_DECREF(lk);
            Py_DECREF(cs);
        }
        if (key == NULL)
            goto error;
        PyObject *had = PyDict_GetItemWithError(raw, key);
        int bad;
        if (had == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(key);
                goto error;
            }
            bad = PyDict_SetItem(raw, key, one);
        }
        else {
            PyObject *more = PyNumber_Add(had, one);
            bad = more == NULL ? -1 : PyDict_SetItem(raw, key, more);
            Py_XDECREF(more);
        }
        Py_DECREF(key);
        if (bad < 0)
            goto error;
        counted++;
    }
    return Py_BuildValue("nnn", i, counted, budget);
error:
    return NULL;
}

/* Calls fn(arg) and checks that it returned a tuple: a new reference, or NULL. */
static PyObject *
call_for_tuple(PyObject *fn, PyObject *arg)
{
    PyObject *r = PyObject_CallOneArg(fn, arg);
    if (r != NULL && !PyTuple_CheckExact(r)) {
        PyErr_SetString(PyExc_TypeError, "offconv._speedups.flush: a callback gave no tuple");
        Py_CLEAR(r);
    }
    return r;
}

/* flush(raw, entries, accepts, leaves, leaf_frames, stacks, callers_frames, counts)
 * sum_blocks' flush: for each (e, leaf key, callers) -> n of ``raw``, in its order, whose
 * entry (thread frame, period, event) = entries[e] is counted (accepts(e), asked once per
 * entry in this order), counts[(thread frame,) + callers' frames + leaf's frames] grows by
 * n * period; the frames come from ``stacks`` and ``leaves``, or from the callbacks
 * callers_frames(callers) and leaf_frames(leaf key) when they are not there. */
static PyObject *
flush(PyObject *self, PyObject *args)
{
    PyObject *raw, *entries, *accepts, *leaves, *leaf_frames, *stacks, *callers_frames, *counts;
    if (!PyArg_ParseTuple(args, "O!O!OO!OO!OO!", &PyDict_Type, &raw, &PyList_Type, &entries,
                          &accepts, &PyDict_Type, &leaves, &leaf_frames, &PyDict_Type, &stacks,
                          &callers_frames, &PyDict_Type, &counts))
        return NULL;
    Py_ssize_t nent = PyList_GET_SIZE(entries);
    signed char *ok = PyMem_Calloc(nent > 0 ? nent : 1, 1); /* 0 unknown, 1 yes, -1 no */
    if (ok == NULL)
        return PyErr_NoMemory();
    Py_ssize_t pos = 0;
    PyObject *rk, *rn;
    while (PyDict_Next(raw, &pos, &rk, &rn)) {
        if (!PyTuple_CheckExact(rk) || PyTuple_GET_SIZE(rk) != 3)
            goto bad;
        PyObject *eo = PyTuple_GET_ITEM(rk, 0), *lk = PyTuple_GET_ITEM(rk, 1),
                 *callers = PyTuple_GET_ITEM(rk, 2);
        Py_ssize_t e = PyLong_AsSsize_t(eo);
        if (e == -1 && PyErr_Occurred())
            goto error;
        if (e < 0 || e >= nent)
            goto bad;
        PyObject *entry = PyList_GET_ITEM(entries, e);
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3)
            goto bad;
        if (ok[e] == 0) {
            PyObject *r = PyObject_CallOneArg(accepts, eo);
            if (r == NULL)
                goto error;
            int t = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (t < 0)
                goto error;
            ok[e] = t ? 1 : -1;
        }
        if (ok[e] < 0)
            continue;
        PyObject *g = NULL, *cs = NULL; /* new references */
        if (lk != Py_None) {
            g = PyDict_GetItemWithError(leaves, lk);
            if (g != NULL && PyTuple_CheckExact(g))
                Py_INCREF(g);
            else if (PyErr_Occurred() || (g = call_for_tuple(leaf_frames, lk)) == NULL)
                goto error;
            if (PyUnicode_GET_LENGTH(callers) > 0) {
                cs = PyDict_GetItemWithError(stacks, callers);
                if (cs != NULL && PyTuple_CheckExact(cs))
                    Py_INCREF(cs);
                else if (PyErr_Occurred() || (cs = call_for_tuple(callers_frames, callers)) == NULL) {
                    Py_DECREF(g);
                    goto error;
                }
            }
        }
        Py_ssize_t ng = g ? PyTuple_GET_SIZE(g) : 0, nc = cs ? PyTuple_GET_SIZE(cs) : 0;
        PyObject *key = PyTuple_New(1 + nc + ng);
        if (key == NULL) {
            Py_XDECREF(g);
            Py_XDECREF(cs);
            goto error;
        }
        PyObject *tf = PyTuple_GET_ITEM(entry, 0);
        Py_INCREF(tf);
        PyTuple_SET_ITEM(key, 0, tf);
        for (Py_ssize_t j = 0; j < nc; j++) {
            PyObject *f = PyTuple_GET_ITEM(cs, j);
            Py_INCREF(f);
            PyTuple_SET_ITEM(key, 1 + j, f);
        }
        for (Py_ssize_t j = 0; j < ng; j++) {
            PyObject *f = PyTuple_GET_ITEM(g, j);
            Py_INCREF(f);
            PyTuple_SET_ITEM(key, 1 + nc + j, f);
        }
        Py_XDECREF(g);
        Py_XDECREF(cs);
        PyObject *w = PyNumber_Multiply(rn, PyTuple_GET_ITEM(entry, 1));
        if (w == NULL) {
            Py_DECREF(key);
            goto error;
        }
        Py_ssize_t m = PyDict_GET_SIZE(counts);
        PyObject *had = PyDict_SetDefault(counts, key, w); /* borrowed */
        int bad = had == NULL;
        if (!bad && PyDict_GET_SIZE(counts) == m) {
            PyObject *sum = PyNumber_Add(had, w);
            bad = sum == NULL || PyDict_SetItem(counts, key, sum) < 0;
            Py_XDECREF(sum);
        }
        Py_DECREF(w);
        Py_DECREF(key);
        if (bad)
            goto error;
    }
    PyMem_Free(ok);
    PyDict_Clear(raw);
    Py_RETURN_NONE;
bad:
    PyErr_SetString(PyExc_TypeError, "offconv._speedups.flush: not sum_blocks' raw keys");
error:
    PyMem_Free(ok);
    return NULL;
}

/* one_line_events(lines, i, heads, keys) -> stop
 *
 * sum_blocks' one_line_events loop (perf script of a recording without call chains: one
 * line an event) from lines[i]: appends to ``keys`` the key (entry, leaf key, "") of each
 * line it takes, exactly as the Python loop builds it, and returns the index of the first
 * line it does not take: the end, or a line Python must look at (not ASCII, no timestamp,
 * a head not in ``heads``, a payload that is not a frame). Python decides that line, and
 * calls again after it when it took it. */
static PyObject *
one_line_events(PyObject *self, PyObject *args)
{
    PyObject *lines, *heads, *keys;
    Py_ssize_t i;
    if (!PyArg_ParseTuple(args, "O!nO!O!", &PyList_Type, &lines, &i, &PyDict_Type, &heads,
                          &PyList_Type, &keys))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(lines);
    for (; i < n; i++) {
        PyObject *line = PyList_GET_ITEM(lines, i);
        if (!PyUnicode_CheckExact(line) || !PyUnicode_IS_ASCII(line))
            break;
        const Py_UCS1 *s = PyUnicode_1BYTE_DATA(line);
        Py_ssize_t len = PyUnicode_GET_LENGTH(line), tend;
        Py_ssize_t ts = ts_search(s, len, &tend);
        if (ts < 0)
            break;
        /* j: after.find(": "), else the last character when it is ':' */
        Py_ssize_t j = -1;
        for (Py_ssize_t x = tend; x + 1 < len; x++)
            if (s[x] == ':' && s[x + 1] == ' ') {
                j = x;
                break;
            }
        if (j < 0) {
            if (len > tend && s[len - 1] == ':')
                j = len - 1;
            else
                break;
        }
        PyObject *before = PyUnicode_Substring(line, 0, ts);
        PyObject *mid = before ? PyUnicode_Substring(line, tend, j) : NULL;
        PyObject *hk = mid ? PyTuple_Pack(3, before, mid, one) : NULL;
        Py_XDECREF(before);
        Py_XDECREF(mid);
        if (hk == NULL)
            return NULL;
        PyObject *e = PyDict_GetItemWithError(heads, hk);
        Py_DECREF(hk);
        if (e == NULL) {
            if (PyErr_Occurred())
                return NULL;
            break;   /* a new head: _inline_head */
        }
        Py_ssize_t p = j + 2;   /* the payload, after its leading spaces */
        while (p < len && s[p] == ' ')
            p++;
        PyObject *leaf;
        if (p >= len) {
            leaf = Py_NewRef(Py_None);
        } else {
            /* _FRAME_LIKE: ^[0-9a-fA-F]+\s+.*\(.*\)$ */
            Py_ssize_t h = p;
            while (h < len && is_hex(s[h]))
                h++;
            if (h == p || h >= len || !is_space(s[h]) || s[len - 1] != ')')
                break;
            Py_ssize_t open = -1;
            for (Py_ssize_t x = h + 1; x < len - 1; x++)
                if (s[x] == '(') {
                    open = x;
                    break;
                }
            if (open < 0)
                break;
            /* rest = payload.partition(" ")[2]; its last "+0x": _offset_key */
            const Py_UCS1 *sp = memchr(s + p, ' ', len - p);
            Py_ssize_t r = sp ? (sp - s) + 1 : len, k = -1;
            for (Py_ssize_t x = len - 3; x >= r; x--)
                if (s[x] == '+' && s[x + 1] == '0' && s[x + 2] == 'x') {
                    k = x;
                    break;
                }
            leaf = NULL;
            if (k >= 0) {
                Py_ssize_t t = k + 3;
                while (t < len && is_hex(s[t]))
                    t++;
                if (t > k + 3 && len - t >= 2 && s[t] == ' ' && s[t + 1] == '(') {
                    int ok = 1;   /* no other '(' after it, its first ')' the last character */
                    for (Py_ssize_t x = t + 2; x < len && ok; x++)
                        if (s[x] == '(' || (s[x] == ')' && x != len - 1))
                            ok = 0;
                    if (ok && s[len - 1] == ')') {
                        PyObject *sym = PyUnicode_Substring(line, r, k);
                        PyObject *tail = sym ? PyUnicode_Substring(line, t, len) : NULL;
                        leaf = tail ? PyTuple_Pack(2, sym, tail) : NULL;
                        Py_XDECREF(sym);
                        Py_XDECREF(tail);
                        if (leaf == NULL)
                            return NULL;
                    }
                }
            }
            if (leaf == NULL && (leaf = PyUnicode_Substring(line, r, len)) == NULL)
                return NULL;
        }
        PyObject *key = PyTuple_Pack(3, e, leaf, empty);
        Py_DECREF(leaf);
        if (key == NULL || PyList_Append(keys, key) < 0) {
            Py_XDECREF(key);
            return NULL;
        }
        Py_DECREF(key);
    }
    return PyLong_FromSsize_t(i);
}

/* kallsyms_for(text, data) -> bytes or None
 *
 * The lines of ``text`` (a copy of /proc/kallsyms) that perf script needs to name every
 * kernel address of a recording whose data section is ``data``, in their order; None when
 * ``text`` holds no text symbol. Used by offconv.inputs.perf_data.kallsyms: perf spends
 * 30-40 ms reading 120k symbols, of which a recording hits a few thousand.
 *
 * Every 8 bytes at every 4-byte offset of ``data`` are read as an address (samples' ips,
 * call chains, and pointers in tracepoint records, which start at 4 mod 8): more than the
 * ips, never fewer. perf names an address v by the symbol it accepts (of a type its
 * version loads: always the text types tTwW) with the largest start <= v, which ends at the
 * next such symbol. So for each v at or above the first text symbol, every line whose
 * address lies from the last text symbol at or below v to the first text symbol above v
 * is kept (both included, with every alias at those addresses): whichever of them perf
 * accepts, the symbol v falls in and the one that ends it are there. Lines naming a module
 * (ending with a "[...]" tag: modules, bpf, ftrace trampolines) are all kept, as are the first and
 * last addresses' lines and _text, _stext and _etext (perf's relocation reads _text or
 * _stext from this file). tests/test_kallsyms_snapshot.py compares perf's output with this
 * and with the whole copy on real recordings.
 */
typedef struct {
    unsigned long long addr;
    unsigned int order;          /* the line's index */
    unsigned int text;           /* type t, T, w or W */
} ksym;

static int
ksym_cmp(const void *a, const void *b)
{
    const ksym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static signed char hexval[256];   /* a hex digit's value, else -1 (filled at import) */

static int
hex_addr(const char *p, Py_ssize_t n, unsigned long long *out)
{
    unsigned long long v = 0;
    Py_ssize_t i = 0;
    for (; i < n && i < 16; i++) {
        int d = hexval[(unsigned char)p[i]];
        if (d < 0)
            break;
        v = v << 4 | (unsigned)d;
    }
    if (i == 0 || i >= n || p[i] != ' ')
        return -1;
    *out = v;
    return (int)i;
}

#define KS_CACHE 16384

static PyObject *
kallsyms_for(PyObject *self, PyObject *args)
{
    Py_buffer text, data;
    if (!PyArg_ParseTuple(args, "y*y*", &text, &data))
        return NULL;
    const char *t = text.buf;
    Py_ssize_t n = text.len, cap = n / 32 + 16;   /* lines: about 45 bytes each */
    ksym *core = NULL;
    char *keep = NULL;
    unsigned int *lstart = NULL;   /* each line's offset (the arrays are small: 16 + 5 bytes
                                      a line, as a first call's page faults cost more than
                                      its work) */
    int *mark = NULL;
    unsigned long long *seen = NULL;
    PyObject *result = NULL;
    if (n >= 0xffffffffLL) {   /* not a kallsyms text */
        result = Py_NewRef(Py_None);
        goto done;
    }
    core = PyMem_Malloc(cap * sizeof(ksym));
    keep = PyMem_Calloc(cap, 1);
    lstart = PyMem_Malloc((cap + 1) * sizeof(unsigned int));
    if (core == NULL || keep == NULL || lstart == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t ncore = 0, line = 0, at = 0;
    while (at < n) {
        if (line + 1 >= cap) {   /* short lines: more room */
            Py_ssize_t more = cap * 2;
            ksym *c2 = PyMem_Realloc(core, more * sizeof(ksym));
            if (c2 != NULL)
                core = c2;
            char *k2 = PyMem_Realloc(keep, more);
            if (k2 != NULL)
                keep = k2;
            unsigned int *l2 = PyMem_Realloc(lstart, (more + 1) * sizeof(unsigned int));
            if (l2 != NULL)
                lstart = l2;
            if (c2 == NULL || k2 == NULL || l2 == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            memset(keep + cap, 0, more - cap);
            cap = more;
        }
        const char *nl = memchr(t + at, '\n', n - at);
        Py_ssize_t end = nl ? nl - t + 1 : n, len = end - at;
        lstart[line] = (unsigned int)at;
        unsigned long long addr;
        int w = hex_addr(t + at, len, &addr);
        /* a module's line ends with its tag, "\t[name]" */
        Py_ssize_t last = len - (nl != NULL) - 1;
        if (w < 0 || w + 2 >= len || t[at + last] == ']') {
            keep[line] = 1;   /* a module's, or not a symbol line: as it is */
        } else {
            const char *name = t + at + w + 3;
            Py_ssize_t nlen = end - (at + w + 3);
            while (nlen > 0 && (name[nlen - 1] == '\n' || name[nlen - 1] == '\r'))
                nlen--;
            char type = t[at + w + 1];
            if ((nlen == 5 && memcmp(name, "_text", 5) == 0) ||
                (nlen == 6 && (memcmp(name, "_stext", 6) == 0 || memcmp(name, "_etext", 6) == 0)))
                keep[line] = 1;
            core[ncore].addr = addr;
            core[ncore].order = (unsigned int)line;
            core[ncore].text = type == 't' || type == 'T' || type == 'w' || type == 'W';
            ncore++;
        }
        line++;
        at = end;
    }
    lstart[line] = (unsigned int)n;
    int sorted = 1;
    for (Py_ssize_t i = 1; i < ncore && sorted; i++)
        sorted = core[i - 1].addr <= core[i].addr;
    if (!sorted)
        qsort(core, ncore, sizeof(ksym), ksym_cmp);
    Py_ssize_t first_text = -1;
    for (Py_ssize_t i = 0; i < ncore; i++)
        if (core[i].text && first_text < 0)
            first_text = i;
    if (first_text < 0 || core[first_text].addr == 0) {
        result = Py_NewRef(Py_None);   /* no text symbol, or addresses hidden */
        goto done;
    }
    /* mark[i] > 0 after the prefix sum: core[i] is kept */
    mark = PyMem_Calloc(ncore + 1, sizeof(int));
    seen = PyMem_Calloc(KS_CACHE, sizeof(unsigned long long));
    if (mark == NULL || seen == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    unsigned long long lo = core[first_text].addr;
    const unsigned char *d = data.buf;
    Py_ssize_t dn = data.len;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t off = 0; off + 8 <= dn; off += 4) {
        unsigned long long v;
        memcpy(&v, d + off, 8);
        if (v < lo)
            continue;
        unsigned long long h = (v >> 2 ^ v >> 17) & (KS_CACHE - 1);
        if (seen[h] == v)
            continue;
        seen[h] = v;
        /* p: the last line whose address is <= v */
        Py_ssize_t a = 0, b = ncore;
        while (a < b) {
            Py_ssize_t m = (a + b) / 2;
            if (core[m].addr <= v) a = m + 1; else b = m;
        }
        Py_ssize_t p = a - 1, from, to;
        while (p >= 0 && !core[p].text)   /* the last text symbol at or below v */
            p--;
        if (p < 0)
            p = first_text;
        from = p;
        while (from > 0 && core[from - 1].addr == core[p].addr)
            from--;
        /* to: the first text symbol above v, with its aliases (or the end) */
        to = a;
        while (to < ncore && !core[to].text)
            to++;
        if (to < ncore) {
            while (to + 1 < ncore && core[to + 1].addr == core[to].addr)
                to++;
        } else {
            to = ncore - 1;
        }
        mark[from]++;
        mark[to + 1]--;
    }
    Py_END_ALLOW_THREADS
    int run = 0;
    for (Py_ssize_t i = 0; i < ncore; i++) {
        run += mark[i];
        if (run > 0 || core[i].addr == core[0].addr || core[i].addr == core[ncore - 1].addr)
            keep[core[i].order] = 1;
    }
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < line; i++)
        if (keep[i])
            size += lstart[i + 1] - lstart[i];
    result = PyBytes_FromStringAndSize(NULL, size);
    if (result == NULL)
        goto done;
    char *o = PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < line; i++)
        if (keep[i]) {
            memcpy(o, t + lstart[i], lstart[i + 1] - lstart[i]);
            o += lstart[i + 1] - lstart[i];
        }
done:
    PyMem_Free(core);
    PyMem_Free(keep);
    PyMem_Free(lstart);
    PyMem_Free(mark);
    PyMem_Free(seen);
    PyBuffer_Release(&text);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"count_blocks", count_blocks, METH_VARARGS,
     "count_blocks(pieces, i, heads, stacks, raw, frames, names, budget, line_cache) -> "
     "(stop, counted, budget): sum_blocks' loop over "
     "plain on-CPU samples, from pieces[i] to the first block it does not take."},
    {"flush", flush, METH_VARARGS,
     "flush(raw, entries, accepts, leaves, leaf_frames, stacks, callers_frames, counts): "
     "sum_blocks' flush of its raw counts into (thread frame + stack) sums."},
    {"one_line_events", one_line_events, METH_VARARGS,
     "one_line_events(lines, i, heads, keys) -> stop: sum_blocks' loop over one-line "
     "events from lines[i], their keys appended to keys, up to a line it leaves to Python."},
    {"kallsyms_for", kallsyms_for, METH_VARARGS,
     "kallsyms_for(text, data) -> bytes or None: the lines of a kallsyms copy that perf "
     "needs to name the kernel addresses of a perf.data's data section."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "offconv._speedups",
    "The per-event loop of perf_script.sum_blocks in C (optional; the Python loop is the "
    "reference).",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    for (int c = 0; c < 256; c++)
        hexval[c] = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    empty = PyUnicode_New(0, 0);
    one = PyLong_FromLong(1);
    if (empty == NULL || one == NULL)
        return NULL;
    return PyModule_Create(&module);
}
