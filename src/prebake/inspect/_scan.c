/* The ELF reader's hot loops in C: prebake.inspect._scan.
 *
 * Optional: prebake.inspect.hotloops falls back to hotloops_py, the pure-Python loops (the
 * reference these are held to, tests/unit/test_scan.py) when this module is not built. Each
 * function reads only the buffers it is given, checks every offset against their lengths, and
 * allocates nothing that outlives the call except the Python objects it returns: hostile tables
 * give wrong-looking names at worst, never a read outside the buffer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "_scan_consts.h" /* PROBE_TAIL, PROBE_HASH_MUL, PROBE_HASH_BITS, PROBE_BITMAP_BYTES */

#define TAIL PROBE_TAIL
_Static_assert(PROBE_BITMAP_BYTES * 8 == 1 << PROBE_HASH_BITS, "one bitmap bit per hash value");

static inline uint32_t rd32(const unsigned char *p, int little) {
    return little ? ((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                     ((uint32_t)p[3] << 24))
                  : ((uint32_t)p[3] | ((uint32_t)p[2] << 8) | ((uint32_t)p[1] << 16) |
                     ((uint32_t)p[0] << 24));
}

static inline uint32_t tail_hash(const unsigned char *p) {
    /* the same function as hotloops_py.tail_hash: little-endian u32 times a Fibonacci constant */
    return (uint32_t)(rd32(p, 1) * PROBE_HASH_MUL) >> (32 - PROBE_HASH_BITS);
}

/* Whether a name of ``tails`` ends at the NUL at ``at`` (>= TAIL): 1, 0, or -1 on error. */
static int ends_here(const unsigned char *base, Py_ssize_t at, const unsigned char *map,
                     PyObject *tails) {
    uint32_t h = tail_hash(base + at - TAIL);
    if (!(map[h >> 3] & (1u << (h & 7))))
        return 0;
    PyObject *key = PyBytes_FromStringAndSize((const char *)base + at - TAIL, TAIL);
    if (key == NULL)
        return -1;
    PyObject *names = PyDict_GetItemWithError(tails, key); /* borrowed */
    Py_DECREF(key);
    if (names == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(names))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyBytes_Check(name))
            continue;
        Py_ssize_t len = PyBytes_GET_SIZE(name);
        if (len <= at && memcmp(base + at - len, PyBytes_AS_STRING(name), (size_t)len) == 0)
            return 1;
    }
    return 0;
}

/* probe(table, bitmap, tails) -> bool
 *
 * Whether some name of ``tails`` (4-byte tail -> tuple of names ending in it, each at least
 * 4 bytes) occurs in ``table`` followed by a NUL: at every NUL (16 bytes at a time with SSE2,
 * else memchr) the four bytes before it are hashed and looked up in ``bitmap``; only on a
 * set bit is the tail looked up in the dict and its names compared.
 */
static PyObject *probe(PyObject *self, PyObject *args) {
    Py_buffer tab, bits;
    PyObject *tails;
    if (!PyArg_ParseTuple(args, "y*y*O!", &tab, &bits, &PyDict_Type, &tails))
        return NULL;
    int found = 0;
    if (bits.len != PROBE_BITMAP_BYTES) {
        PyErr_Format(PyExc_ValueError, "probe bitmap must be %d bytes", PROBE_BITMAP_BYTES);
        found = -1;
        goto done;
    }
    const unsigned char *base = tab.buf, *map = bits.buf;
    const Py_ssize_t n = tab.len;
    Py_ssize_t at = 0;
#if defined(__SSE2__)
    /* the NULs of 16 bytes at a time, as a bit mask (a name is 40 bytes on average) */
    const __m128i zero = _mm_setzero_si128();
    for (; at + 16 <= n; at += 16) {
        __m128i block = _mm_loadu_si128((const __m128i *)(base + at));
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(block, zero));
        while (mask) {
            Py_ssize_t q = at + __builtin_ctz(mask);
            mask &= mask - 1;
            if (q >= TAIL && (found = ends_here(base, q, map, tails)) != 0)
                goto done;
        }
    }
#endif
    if (at < TAIL)
        at = TAIL;
    while (at < n) {
        const unsigned char *nul = memchr(base + at, 0, (size_t)(n - at));
        if (nul == NULL)
            break;
        at = nul - base;
        if ((found = ends_here(base, at, map, tails)) != 0)
            goto done;
        at += 1 + TAIL; /* the next name's NUL needs TAIL bytes of name before it */
    }
done:
    PyBuffer_Release(&tab);
    PyBuffer_Release(&bits);
    if (found < 0)
        return NULL;
    return PyBool_FromLong(found);
}

/* Whether ``needle`` (at least 2 bytes) occurs in ``text``. With SSE2, 16 positions at a
 * time are tested for the needle's first and last bytes (rare together, even where the first
 * alone is common: "." in section names, "S" in mangled ones) and only those are compared:
 * twice the speed of glibc's memmem on string tables. The last < 16 + len positions go to
 * memmem. */
static int contains(const unsigned char *text, Py_ssize_t n, const unsigned char *needle,
                    Py_ssize_t len) {
    if (len > n)
        return 0;
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    const __m128i first = _mm_set1_epi8((char)needle[0]);
    const __m128i last = _mm_set1_epi8((char)needle[len - 1]);
    for (; i + len - 1 + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(text + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(text + i + len - 1));
        unsigned mask =
            (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first),
                                                      _mm_cmpeq_epi8(b, last)));
        while (mask) {
            int bit = __builtin_ctz(mask);
            if (memcmp(text + i + bit + 1, needle + 1, (size_t)(len - 2)) == 0)
                return 1;
            mask &= mask - 1;
        }
    }
#endif
    return memmem(text + i, (size_t)(n - i), needle, (size_t)len) != NULL;
}

/* occurs(table, needles) -> int: bit i set when needles[i] occurs in table. */
static PyObject *occurs(PyObject *self, PyObject *args) {
    Py_buffer tab;
    PyObject *needles;
    if (!PyArg_ParseTuple(args, "y*O!", &tab, &PyTuple_Type, &needles))
        return NULL;
    unsigned long mask = 0;
    Py_ssize_t count = PyTuple_GET_SIZE(needles);
    if (count > 63) {
        PyBuffer_Release(&tab);
        PyErr_SetString(PyExc_ValueError, "at most 63 needles");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, i);
        if (!PyBytes_Check(needle)) {
            PyBuffer_Release(&tab);
            PyErr_SetString(PyExc_TypeError, "needles must be bytes");
            return NULL;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(needle);
        const unsigned char *text = tab.buf, *want = (const unsigned char *)PyBytes_AS_STRING(needle);
        int found = len == 0 ? 1
                    : len == 1 ? memchr(text, want[0], (size_t)tab.len) != NULL
                               : contains(text, tab.len, want, len);
        if (found)
            mask |= 1ul << i;
    }
    PyBuffer_Release(&tab);
    return PyLong_FromUnsignedLong(mask);
}

/* first_type(data, shoff, count, entsize, little, want) -> int: the index of the first
 * section header whose sh_type (the u32 at byte 4 of every header, both classes) is
 * ``want``, or -1. The whole table must lie inside ``data``. */
static PyObject *first_type(PyObject *self, PyObject *args) {
    Py_buffer data;
    Py_ssize_t shoff, count, entsize;
    int little;
    unsigned long want;
    if (!PyArg_ParseTuple(args, "y*nnnpk", &data, &shoff, &count, &entsize, &little, &want))
        return NULL;
    Py_ssize_t found = -1;
    if (count == 0) { /* no table: nothing to search, and no pointer into it to form */
        PyBuffer_Release(&data);
        return PyLong_FromSsize_t(found);
    }
    if (shoff < 0 || count < 0 || entsize < 8 || shoff > data.len ||
        (data.len - shoff) / entsize < count) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "section header table outside the data");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)data.buf + shoff + 4;
    for (Py_ssize_t i = 0; i < count; i++, p += entsize) {
        if (rd32(p, little) == want) {
            found = i;
            break;
        }
    }
    PyBuffer_Release(&data);
    return PyLong_FromSsize_t(found);
}

/* The name at ``off`` (inside the table: the caller checks): bytes up to the next NUL or
 * the table's end, decoded as UTF-8 with replacement (binreader.names_at / cstring_at). */
static PyObject *name_at(const char *strtab, Py_ssize_t len, uint32_t off) {
    const char *start = strtab + off;
    const size_t left = (size_t)len - (size_t)off; /* off < len: the caller checked */
    const char *end = memchr(start, 0, left);
    Py_ssize_t n = end ? end - start : (Py_ssize_t)left;
    return PyUnicode_DecodeUTF8(start, n, "replace");
}

/* object_symbols(symtab, strtab, is64, little) -> (defined, undefined, exports, weak)
 *
 * An object's global symbols as elf._object_symbols makes them: global, weak or GNU-unique
 * binding, not a section or file symbol; defined when st_shndx is not 0; exports the
 * defined ones not hidden or internal; weak the weak and GNU-unique definitions. Empty
 * names are left out everywhere.
 */
static PyObject *object_symbols(PyObject *self, PyObject *args) {
    Py_buffer sym, str;
    int is64, little;
    if (!PyArg_ParseTuple(args, "y*y*pp", &sym, &str, &is64, &little))
        return NULL;
    PyObject *defined = PyList_New(0), *undefined = PyList_New(0), *exports = PyList_New(0);
    PyObject *weak = PySet_New(NULL), *result = NULL;
    if (!defined || !undefined || !exports || !weak)
        goto fail;
    const Py_ssize_t es = is64 ? 24 : 16, info_at = is64 ? 4 : 12;
    const unsigned char *p = sym.buf;
    const Py_ssize_t n = sym.len / es;
    const char *strtab = str.buf;
    for (Py_ssize_t i = 0; i < n; i++, p += es) {
        unsigned info = p[info_at], other = p[info_at + 1];
        unsigned bind = info >> 4, type = info & 0xF;
        if (!(bind == 1 || bind == 2 || bind == 10) || type == 3 || type == 4)
            continue;
        uint32_t off = rd32(p, little);
        /* compared unsigned: a 32-bit Py_ssize_t would make st_name >= 2^31 negative */
        if ((size_t)off >= (size_t)str.len || strtab[off] == 0)
            continue; /* outside the table, or an empty name */
        int has_sec = p[info_at + 2] | p[info_at + 3];
        PyObject *name = name_at(strtab, str.len, off);
        if (name == NULL)
            goto fail;
        int bad = 0;
        if (!has_sec) {
            bad = PyList_Append(undefined, name);
        } else {
            bad = PyList_Append(defined, name);
            if (!bad && (other & 3) != 1 && (other & 3) != 2)
                bad = PyList_Append(exports, name);
            if (!bad && (bind == 2 || bind == 10))
                bad = PySet_Add(weak, name);
        }
        Py_DECREF(name);
        if (bad)
            goto fail;
    }
    result = PyTuple_Pack(4, defined, undefined, exports, weak);
fail:
    Py_XDECREF(defined);
    Py_XDECREF(undefined);
    Py_XDECREF(exports);
    Py_XDECREF(weak);
    PyBuffer_Release(&sym);
    PyBuffer_Release(&str);
    return result;
}


/* fill_demangled(cache, names, demangler, limit) -> None
 *
 * For every name of ``names`` not yet a key of ``cache``: cache[name] = its demangled form,
 * or None, exactly as demangle.demangle_once answers (``__Z`` tried without its first ``_``;
 * not ``_Z…``, over MAX_NAME characters, holding a NUL, failing, not UTF-8 or unchanged:
 * None). ``demangler`` is the address of the C++ runtime's ``abi::__cxa_demangle`` that
 * demangle.py loaded; one buffer is reused (the runtime ``realloc``s it). ``cache`` is
 * emptied before it would grow past ``limit`` entries.
 */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
#define MAX_NAME 4096

static PyObject *demangled(demangle_fn fn, PyObject *name, char **buf, size_t *cap) {
    Py_ssize_t n;
    const char *raw = PyUnicode_AsUTF8AndSize(name, &n);
    if (raw == NULL) { /* not encodable (a lone surrogate): demangle_once says None */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t chars = PyUnicode_GET_LENGTH(name);
    if (n >= 3 && memcmp(raw, "__Z", 3) == 0) {
        raw++, n--, chars--;
    }
    if (n < 2 || raw[0] != '_' || raw[1] != 'Z' || chars > MAX_NAME || memchr(raw, 0, n))
        Py_RETURN_NONE;
    int status = 0;
    char *out = fn(raw, *buf, cap, &status);
    if (status != 0 || out == NULL)
        Py_RETURN_NONE; /* the buffer is left as it was */
    *buf = out;
    if (strcmp(out, raw) == 0)
        Py_RETURN_NONE;
    PyObject *text = PyUnicode_DecodeUTF8(out, (Py_ssize_t)strlen(out), NULL);
    if (text == NULL) { /* the runtime wrote bytes that are not UTF-8 */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return text;
}

static PyObject *fill_demangled(PyObject *self, PyObject *args) {
    PyObject *cache, *names;
    unsigned long long addr;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "O!O!Kn", &PyDict_Type, &cache, &PyList_Type, &names, &addr,
                          &limit))
        return NULL;
    if (addr == 0) {
        PyErr_SetString(PyExc_ValueError, "no demangler");
        return NULL;
    }
    demangle_fn fn = (demangle_fn)(uintptr_t)addr;
    size_t cap = 1024;
    char *buf = malloc(cap);
    if (buf == NULL)
        return PyErr_NoMemory();
    PyObject *result = Py_None;
    Py_INCREF(names); /* held while it is read */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); i++) {
        PyObject *name = PyList_GET_ITEM(names, i);
        if (!PyUnicode_CheckExact(name))
            continue;
        int known = PyDict_Contains(cache, name);
        if (known < 0) {
            result = NULL;
            break;
        }
        if (known)
            continue;
        Py_INCREF(name);
        PyObject *value = demangled(fn, name, &buf, &cap);
        if (PyDict_GET_SIZE(cache) >= limit)
            PyDict_Clear(cache);
        int bad = PyDict_SetItem(cache, name, value);
        Py_DECREF(value);
        Py_DECREF(name);
        if (bad) {
            result = NULL;
            break;
        }
    }
    Py_DECREF(names);
    free(buf);
    if (result != NULL)
        Py_INCREF(result);
    return result;
}

/* count_byte(buf, byte, start) -> int: how many times ``byte`` occurs in buf[start:]. */
static PyObject *count_byte(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int byte;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "y*in", &buf, &byte, &start))
        return NULL;
    Py_ssize_t count = 0;
    const unsigned char *p = buf.buf, *end = p + buf.len;
    if (start < 0)
        start = 0;
    if (start < buf.len) {
        p += start;
        while (p < end) {
            const unsigned char *hit = memchr(p, byte, (size_t)(end - p));
            if (hit == NULL)
                break;
            count++;
            p = hit + 1;
        }
    }
    PyBuffer_Release(&buf);
    return PyLong_FromSsize_t(count);
}

/* dangling(offsets, heads) -> int: how many distinct values of ``offsets`` (a buffer of
 * unsigned 32- or 64-bit native integers: an ``array``) are not in the set ``heads``.
 * An archive index lists each member's offset once per symbol, in runs: one set lookup
 * per run. */
static PyObject *dangling(PyObject *self, PyObject *args) {
    PyObject *heads, *obj;
    if (!PyArg_ParseTuple(args, "OO!", &obj, &PySet_Type, &heads))
        return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(obj, &buf, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    const char *fmt = buf.format ? buf.format : "B";
    if (buf.itemsize != 4 && buf.itemsize != 8) {
        PyBuffer_Release(&buf);
        PyErr_Format(PyExc_TypeError, "offsets of %zd bytes", buf.itemsize);
        return NULL;
    }
    if (strchr("ILQ", fmt[0]) == NULL || fmt[1] != 0) {
        PyBuffer_Release(&buf);
        PyErr_Format(PyExc_TypeError, "offsets of format %s", fmt);
        return NULL;
    }
    PyObject *missing = PySet_New(NULL), *result = NULL;
    if (missing == NULL)
        goto done;
    Py_ssize_t n = buf.len / buf.itemsize;
    unsigned long long prev = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned long long v;
        if (buf.itemsize == 4) {
            uint32_t w;
            memcpy(&w, (const char *)buf.buf + 4 * i, 4);
            v = w;
        } else {
            uint64_t w;
            memcpy(&w, (const char *)buf.buf + 8 * i, 8);
            v = w;
        }
        if (i > 0 && v == prev)
            continue;
        prev = v;
        PyObject *key = PyLong_FromUnsignedLongLong(v);
        if (key == NULL)
            goto done;
        int in = PySet_Contains(heads, key);
        if (in == 0)
            in = PySet_Add(missing, key) < 0 ? -1 : 0;
        Py_DECREF(key);
        if (in < 0)
            goto done;
    }
    result = PyLong_FromSsize_t(PySet_GET_SIZE(missing));
done:
    Py_XDECREF(missing);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"probe", probe, METH_VARARGS, "Whether a candidate name followed by a NUL is in a table."},
    {"occurs", occurs, METH_VARARGS, "A bit per needle found in a buffer."},
    {"first_type", first_type, METH_VARARGS, "The first section header of a type, or -1."},
    {"object_symbols", object_symbols, METH_VARARGS, "An object's global symbols."},
    {"count_byte", count_byte, METH_VARARGS, "How often a byte occurs from an offset on."},
    {"dangling", dangling, METH_VARARGS, "Distinct index offsets that are not member heads."},
    {"fill_demangled", fill_demangled, METH_VARARGS, "Demangle the names a cache lacks."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "prebake.inspect._scan", "The ELF reader's hot loops in C.", -1,
    methods,
};

/* The module, with the probe's constants as it was built with them (a test holds them to
 * what hotloops_py reads from _scan_consts.h). */
PyMODINIT_FUNC PyInit__scan(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *mul = PyLong_FromUnsignedLong(PROBE_HASH_MUL); /* > LONG_MAX where long is 32 bits */
    int bad = mul == NULL || PyModule_AddObjectRef(m, "PROBE_HASH_MUL", mul) < 0 ||
              PyModule_AddIntConstant(m, "PROBE_TAIL", PROBE_TAIL) < 0 ||
              PyModule_AddIntConstant(m, "PROBE_HASH_BITS", PROBE_HASH_BITS) < 0 ||
              PyModule_AddIntConstant(m, "PROBE_BITMAP_BYTES", PROBE_BITMAP_BYTES) < 0;
    Py_XDECREF(mul);
    if (bad) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
