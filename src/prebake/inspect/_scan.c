/* The readers' hot loops in C (ELF tables, wasm bodies and symbol tables):
 * prebake.inspect._scan.
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

/* named(headers, count, entsize, little, names, name) -> list[int]: the index of every
 * section header whose sh_name (the u32 at byte 0 of every header, both classes) is an offset
 * of ``names`` (the section name table) where ``name`` (with its NUL) begins: a header that
 * points into the tail of a longer name matches, a longer name whose head it is does not.
 * One pass over the headers, nothing copied: the name table of a clang object is its whole
 * string table. The whole header table must lie inside ``headers``; ``entsize`` is a multiple
 * of 4 (elf checks both before it asks). */
static PyObject *named(PyObject *self, PyObject *args) {
    Py_buffer heads, tab, want;
    Py_ssize_t count, entsize;
    int little;
    if (!PyArg_ParseTuple(args, "y*nnpy*y*", &heads, &count, &entsize, &little, &tab, &want))
        return NULL;
    PyObject *out = NULL;
    if (count != 0 && (count < 0 || entsize < 8 || entsize % 4 || heads.len / entsize < count)) {
        PyErr_SetString(PyExc_ValueError, "section header table outside the data");
        goto done;
    }
    if ((out = PyList_New(0)) == NULL || want.len == 0)
        goto done;
    const unsigned char *p = heads.buf, *base = tab.buf, *name = want.buf;
    const Py_ssize_t n = tab.len, len = want.len;
    for (Py_ssize_t i = 0; i < count; i++, p += entsize) {
        const uint32_t off = rd32(p, little);
        /* unsigned: an offset of 2**31 or more is negative in a 32-bit Py_ssize_t */
        if ((size_t)off >= (size_t)n || (size_t)n - off < (size_t)len || base[off] != name[0] ||
            memcmp(base + off + 1, name + 1, (size_t)(len - 1)) != 0)
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(out, index) < 0) {
            Py_XDECREF(index);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(index);
    }
done:
    PyBuffer_Release(&heads);
    PyBuffer_Release(&tab);
    PyBuffer_Release(&want);
    return out;
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

/* --- WebAssembly ---------------------------------------------------------------------------
 *
 * The wasm reader's two hot loops (wasm_code.eh_scan, wasm._object_symbols). Both answer None
 * for anything they cannot read to the end (a truncated LEB, a body that does not decode, an
 * unknown symbol kind, a linking version they do not know): the caller then runs its own
 * Python, which is the reference these are held to (tests/unit/test_scan.py) and which words
 * the error. None is never an answer about the bytes, only "ask the reference".
 */

/* Position after a (signed or unsigned) LEB128 of at most 10 bytes, or -1. */
static inline Py_ssize_t w_skip_leb(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end) {
    const Py_ssize_t start = pos;
    for (;;) {
        if (pos >= end)
            return -1;
        if (b[pos++] < 0x80)
            return pos;
        if (pos - start >= 10)
            return -1;
    }
}

/* An unsigned LEB128 of at most 10 bytes: its low 64 bits in *v, *big when bits above them
 * are set (every count, index and sub-opcode is then out of range); the position after it,
 * or -1. */
static inline Py_ssize_t w_uleb(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                                uint64_t *v, int *big) {
    uint64_t r = 0;
    int shift = 0;
    *big = 0;
    for (;;) {
        if (pos >= end)
            return -1;
        const unsigned c = b[pos++];
        const uint64_t bits = c & 0x7F;
        if (shift < 64) {
            r |= bits << shift;
            if (shift > 57 && (bits >> (64 - shift)))
                *big = 1;
        } else if (bits) {
            *big = 1;
        }
        if (c < 0x80) {
            *v = r;
            return pos;
        }
        shift += 7;
        if (shift >= 70)
            return -1;
    }
}

/* A count that must fit in what is left (the reference's ``n > end - pos`` refusal). */
static inline Py_ssize_t w_count(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                                 uint64_t *n) {
    int big;
    pos = w_uleb(b, pos, end, n, &big);
    if (pos < 0 || big || *n > (uint64_t)(end - pos))
        return -1;
    return pos;
}

static inline Py_ssize_t w_valtype(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end) {
    if (pos >= end)
        return -1;
    if (b[pos] == 0x63 || b[pos] == 0x64)
        return w_skip_leb(b, pos + 1, end);
    return pos + 1;
}

/* The value-type tables (wasm_code.type_tables): each first byte's families as a 32-bit mask
 * (0xFFFFFFFF: no value type / no abstract heap type), and the bits of the families these
 * loops set themselves. */
typedef struct {
    const unsigned char *vt, *heap;
    uint32_t reftype, typed_ref, multivalue, multimemory, overlong_table;
} type_tables;

static inline uint32_t rd32le(const unsigned char *p) { return rd32(p, 1); }

#define W_NONE 0xFFFFFFFFu

/* Read ``types`` = (vt: 1024 bytes, heap: 1024 bytes, (5 bits)) into *tt; 0, or -1 with a
 * Python error set. The buffers stay owned by the tuple, which the caller holds. */
static int w_type_tables(PyObject *types, type_tables *tt) {
    PyObject *vt, *heap, *bits;
    if (!PyTuple_Check(types) || !PyArg_ParseTuple(types, "SSO!", &vt, &heap, &PyTuple_Type,
                                                   &bits))
        return -1;
    if (PyBytes_GET_SIZE(vt) != 1024 || PyBytes_GET_SIZE(heap) != 1024) {
        PyErr_SetString(PyExc_ValueError, "type tables must be 1024 bytes");
        return -1;
    }
    tt->vt = (const unsigned char *)PyBytes_AS_STRING(vt);
    tt->heap = (const unsigned char *)PyBytes_AS_STRING(heap);
    unsigned int b[5];
    if (!PyArg_ParseTuple(bits, "IIIII", &b[0], &b[1], &b[2], &b[3], &b[4]))
        return -1;
    tt->reftype = b[0], tt->typed_ref = b[1], tt->multivalue = b[2], tt->multimemory = b[3];
    tt->overlong_table = b[4];
    return 0;
}

/* A heap type (an abstract one's byte, or a type index as a non-negative s33): the position
 * after it, its families in *mask; -1 (wasm_code.heaptype). */
static inline Py_ssize_t w_heaptype(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                                    const type_tables *tt, uint32_t *mask) {
    if (pos >= end)
        return -1;
    const unsigned c = b[pos];
    if (c >= 0x40 && c < 0x80) {
        const uint32_t m = rd32le(tt->heap + 4 * c);
        if (m == W_NONE)
            return -1;
        *mask = m;
        return pos + 1;
    }
    pos = w_skip_leb(b, pos, end);
    if (pos < 0 || (b[pos - 1] & 0x40))
        return -1;
    *mask = tt->reftype | tt->typed_ref;
    return pos;
}

/* What a non-nullable reference adds to its heap type's families: typed function references
 * for func and extern (wasm_code.non_null). */
static inline uint32_t w_non_null(unsigned first, const type_tables *tt) {
    return first == 0x70 || first == 0x6F ? tt->typed_ref : 0;
}

/* A value type (``packed``: a field's storage type, i8/i16 too): the position after it, its
 * families in *mask; -1 (wasm_code.valtype). */
static inline Py_ssize_t w_valtype_fams(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                                        const type_tables *tt, int packed, uint32_t *mask) {
    if (pos >= end)
        return -1;
    const unsigned t = b[pos];
    if (t == 0x63 || t == 0x64) {
        const Py_ssize_t ht = pos + 1;
        pos = w_heaptype(b, ht, end, tt, mask);
        if (pos >= 0 && t == 0x64)
            *mask |= w_non_null(b[ht], tt);
        return pos;
    }
    const uint32_t m = rd32le(tt->vt + 4 * t);
    if (m == W_NONE) {
        if (packed && (t == 0x78 || t == 0x77)) {
            *mask = 0;
            return pos + 1;
        }
        return -1;
    }
    *mask = m;
    return pos + 1;
}

/* Count each family of ``mask`` once. */
static inline void w_add(uint64_t *counts, uint32_t mask) {
    while (mask) {
        counts[__builtin_ctz(mask)]++;
        mask &= mask - 1;
    }
}

/* wasm_code's immediate shapes, in its order (NONE, LEB, ... CAST) */
enum { S_NONE, S_LEB, S_LEB2, S_BLOCK, S_MEMARG, S_F32, S_F64, S_BRTABLE, S_SELECT_T,
       S_HEAPTYPE, S_TRY_TABLE, S_MEMARG_LANE, S_LANE, S_V128, S_CALL_INDIRECT, S_MEMIDX,
       S_CAST, S_UNKNOWN = 255 };

#define W_PAGES 4 /* 0xFB GC, 0xFC, 0xFD SIMD, 0xFE threads */
#define W_FAMILIES 32

/* The decode's tables (wasm_code.deep_tables): for the single-byte opcodes each one's shape,
 * families (a 32-bit mask, little-endian) and depth change (a signed byte); for each page its
 * shapes and masks by sub-opcode; the value-type tables. */
typedef struct {
    const unsigned char *shapes, *masks, *depths;
    const unsigned char *pshapes[W_PAGES], *pmasks[W_PAGES];
    Py_ssize_t plen[W_PAGES];
    type_tables tt;
} deep_tables;

static inline Py_ssize_t w_memarg(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                                  const deep_tables *t, uint64_t *counts) {
    uint64_t align;
    int big;
    pos = w_uleb(b, pos, end, &align, &big);
    if (pos >= 0 && (align & 0x40)) { /* multi-memory: a memory index follows */
        w_add(counts, t->tt.multimemory);
        pos = w_skip_leb(b, pos, end);
    }
    return pos < 0 ? -1 : w_skip_leb(b, pos, end);
}

static inline Py_ssize_t w_blocktype(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                                     const deep_tables *t, uint64_t *counts) {
    if (pos >= end)
        return -1;
    const unsigned c = b[pos];
    if (c == 0x40)
        return pos + 1;
    if (c > 0x40 && c < 0x80) { /* a value type */
        uint32_t mask;
        pos = w_valtype_fams(b, pos, end, &t->tt, 0, &mask);
        if (pos >= 0)
            w_add(counts, mask);
        return pos;
    }
    pos = w_skip_leb(b, pos, end); /* a type index: a non-negative s33 */
    if (pos < 0 || (b[pos - 1] & 0x40))
        return -1;
    w_add(counts, t->tt.multivalue);
    return pos;
}

static inline Py_ssize_t w_fixed(Py_ssize_t pos, Py_ssize_t n, Py_ssize_t end) {
    return pos <= end - n ? pos + n : -1;
}

/* The position after the immediates of an instruction of ``shape``, the value types they
 * name counted, or -1: wasm_code._immediates. */
static Py_ssize_t w_immediates(unsigned shape, const unsigned char *b, Py_ssize_t pos,
                               Py_ssize_t end, const deep_tables *t, uint64_t *counts) {
    uint64_t n = 0;
    uint32_t mask;
    switch (shape) {
    case S_NONE:
        return pos;
    case S_LEB:
        return w_skip_leb(b, pos, end);
    case S_MEMARG:
        return w_memarg(b, pos, end, t, counts);
    case S_BLOCK:
        return w_blocktype(b, pos, end, t, counts);
    case S_LEB2:
        pos = w_skip_leb(b, pos, end);
        return pos < 0 ? -1 : w_skip_leb(b, pos, end);
    case S_CALL_INDIRECT:
        pos = w_skip_leb(b, pos, end);
        if (pos < 0)
            return -1;
        if (pos < end && b[pos] != 0)
            w_add(counts, t->tt.overlong_table);
        return w_skip_leb(b, pos, end);
    case S_MEMIDX:
        if (pos < end && b[pos] != 0)
            w_add(counts, t->tt.multimemory);
        return w_skip_leb(b, pos, end);
    case S_F32:
        return w_fixed(pos, 4, end);
    case S_F64:
        return w_fixed(pos, 8, end);
    case S_V128:
        return w_fixed(pos, 16, end);
    case S_LANE:
        return w_fixed(pos, 1, end);
    case S_MEMARG_LANE:
        pos = w_memarg(b, pos, end, t, counts);
        return pos < 0 ? -1 : w_fixed(pos, 1, end);
    case S_HEAPTYPE:
        pos = w_heaptype(b, pos, end, &t->tt, &mask);
        if (pos >= 0)
            w_add(counts, mask);
        return pos;
    case S_BRTABLE:
        pos = w_count(b, pos, end, &n);
        for (uint64_t i = 0; i <= n && pos >= 0; i++)
            pos = w_skip_leb(b, pos, end);
        return pos;
    case S_SELECT_T:
        pos = w_count(b, pos, end, &n);
        for (uint64_t i = 0; i < n && pos >= 0; i++) {
            pos = w_valtype_fams(b, pos, end, &t->tt, 0, &mask);
            if (pos >= 0)
                w_add(counts, mask);
        }
        return pos;
    case S_CAST: {
        if (pos >= end || b[pos] > 3)
            return -1;
        const unsigned flags = b[pos];
        pos = w_skip_leb(b, pos + 1, end);
        for (int k = 0; k < 2 && pos >= 0; k++) {
            const Py_ssize_t ht = pos;
            pos = w_heaptype(b, pos, end, &t->tt, &mask);
            if (pos >= 0)
                w_add(counts, mask | ((flags >> k) & 1 ? 0 : w_non_null(b[ht], &t->tt)));
        }
        return pos;
    }
    case S_TRY_TABLE:
        pos = w_blocktype(b, pos, end, t, counts);
        if (pos >= 0)
            pos = w_count(b, pos, end, &n);
        for (uint64_t i = 0; i < n && pos >= 0; i++) {
            if (pos >= end)
                return -1;
            const unsigned kind = b[pos++];
            if (kind > 3)
                return -1;
            if (kind <= 1)
                pos = w_skip_leb(b, pos, end); /* the tag */
            if (pos >= 0)
                pos = w_skip_leb(b, pos, end); /* the label */
        }
        return pos;
    default:
        return -1;
    }
}

/* Instructions from ``pos`` to the ``end`` that closes them, families counted: the position
 * after that ``end``, or -1 (wasm_code.decode_expr). */
static Py_ssize_t w_expr(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                         const deep_tables *t, uint64_t *counts) {
    int64_t depth = 0;
    while (pos < end) {
        const unsigned op = b[pos++];
        if (op == 0x0B) {
            if (depth == 0)
                return pos;
            depth--;
            continue;
        }
        unsigned shape = t->shapes[op];
        const unsigned char *mp = t->masks + 4 * op;
        if (shape == S_UNKNOWN) {
            if (op < 0xFB || op > 0xFE)
                return -1;
            const int page = (int)op - 0xFB;
            uint64_t sub;
            int big;
            pos = w_uleb(b, pos, end, &sub, &big);
            if (pos < 0 || big || sub >= (uint64_t)t->plen[page])
                return -1;
            shape = t->pshapes[page][sub];
            if (shape == S_UNKNOWN)
                return -1;
            mp = t->pmasks[page] + 4 * sub;
        } else {
            depth += (signed char)t->depths[op];
        }
        if (shape != S_NONE) {
            pos = w_immediates(shape, b, pos, end, t, counts);
            if (pos < 0)
                return -1;
        }
        const uint32_t mask = rd32le(mp);
        if (mask)
            w_add(counts, mask);
    }
    return -1; /* no final ``end``, or an immediate ran past */
}

/* One body: its local declarations (each run's type counted), then its instructions, whose
 * final ``end`` must be its last byte (wasm_code.decode_body); 0 or -1. */
static int w_deep_body(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                       const deep_tables *t, uint64_t *counts) {
    uint64_t ndecl;
    int big;
    pos = w_uleb(b, pos, end, &ndecl, &big);
    if (pos < 0 || big || ndecl > (uint64_t)(end - pos))
        return -1;
    for (uint64_t i = 0; i < ndecl && pos >= 0; i++) {
        uint32_t mask;
        pos = w_skip_leb(b, pos, end);
        if (pos >= 0)
            pos = w_valtype_fams(b, pos, end, &t->tt, 0, &mask);
        if (pos >= 0)
            w_add(counts, mask);
    }
    if (pos < 0)
        return -1;
    return w_expr(b, pos, end, t, counts) == end ? 0 : -1;
}

/* ``counts`` as a tuple of ``n`` ints, or NULL with the error set. */
static PyObject *w_counts(const uint64_t *counts, Py_ssize_t n) {
    PyObject *result = PyTuple_New(n);
    for (Py_ssize_t f = 0; result != NULL && f < n; f++) {
        PyObject *v = PyLong_FromUnsignedLongLong(counts[f]);
        if (v == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyTuple_SET_ITEM(result, f, v);
    }
    return result;
}

/* wasm_deep_scan(buf, bodies, (shapes, masks, depths), ((shapes, masks) of 0xFB..0xFE),
 *                types) -> (count of family 0, ... family 31) | index of a body | None
 *
 * Every instruction of every body (``bodies``: (start, end) pairs in ``buf``) decoded, as
 * wasm_code.decode_bodies does; the index of the first body that does not decode to exactly
 * its size, or lies outside ``buf`` (the Python then decodes that one and says where and
 * why). The tables are wasm_code.deep_tables(), made from wasm_code.OPS and PREFIXED, so that
 * the instructions are known in one place. */
static PyObject *wasm_deep_scan(PyObject *self, PyObject *args) {
    Py_buffer buf;
    PyObject *bodies, *single, *pages, *types, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*O!O!O!O!", &buf, &PyList_Type, &bodies, &PyTuple_Type,
                          &single, &PyTuple_Type, &pages, &PyTuple_Type, &types))
        return NULL;
    deep_tables t;
    PyObject *shapes, *masks, *depths;
    if (!PyArg_ParseTuple(single, "SSS", &shapes, &masks, &depths) ||
        w_type_tables(types, &t.tt) < 0)
        goto done;
    if (PyBytes_GET_SIZE(shapes) != 256 || PyBytes_GET_SIZE(masks) != 1024 ||
        PyBytes_GET_SIZE(depths) != 256 || PyTuple_GET_SIZE(pages) != W_PAGES) {
        PyErr_SetString(PyExc_ValueError, "deep tables of the wrong sizes");
        goto done;
    }
    t.shapes = (const unsigned char *)PyBytes_AS_STRING(shapes);
    t.masks = (const unsigned char *)PyBytes_AS_STRING(masks);
    t.depths = (const unsigned char *)PyBytes_AS_STRING(depths);
    for (int p = 0; p < W_PAGES; p++) {
        PyObject *ps, *pm;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(pages, p), "SS", &ps, &pm))
            goto done;
        if (PyBytes_GET_SIZE(pm) != 4 * PyBytes_GET_SIZE(ps)) {
            PyErr_SetString(PyExc_ValueError, "a page's masks are not 4 bytes per shape");
            goto done;
        }
        t.pshapes[p] = (const unsigned char *)PyBytes_AS_STRING(ps);
        t.pmasks[p] = (const unsigned char *)PyBytes_AS_STRING(pm);
        t.plen[p] = PyBytes_GET_SIZE(ps);
    }
    uint64_t counts[W_FAMILIES] = {0};
    const Py_ssize_t n = PyList_GET_SIZE(bodies);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(bodies, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "bodies are (start, end) tuples");
            goto done;
        }
        const Py_ssize_t start = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        const Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 1));
        if (PyErr_Occurred())
            goto done;
        if (start < 0 || end <= start || end > buf.len ||
            w_deep_body(buf.buf, start, end, &t, counts) < 0) {
            result = PyLong_FromSsize_t(i);
            goto done;
        }
    }
    result = w_counts(counts, W_FAMILIES);
done:
    PyBuffer_Release(&buf);
    return result;
}

/* The name of a symbol: a LEB length and its bytes, decoded as UTF-8 with replacement. */
static PyObject *w_name(const unsigned char *b, Py_ssize_t *pos, Py_ssize_t end) {
    uint64_t n;
    int big;
    Py_ssize_t p = w_uleb(b, *pos, end, &n, &big);
    if (p < 0 || big || n > (uint64_t)(end - p))
        return NULL;
    *pos = p + (Py_ssize_t)n;
    return PyUnicode_DecodeUTF8((const char *)b + p, (Py_ssize_t)n, "replace");
}

/* wasm_symbols(buf, start, end, imports) -> (defined, undefined, exports, weak,
 *                                             undefined_all, names) | None
 *
 * The linking section's symbol tables (``buf[start:end]``, version first) as
 * wasm.parse_symbols reads them and wasm._symbols_of_object sorts them: the first four as
 * ``Symbols`` holds them (local symbols left out), then every undefined name and the set of
 * every name, local ones included (what the EH markers are looked up in). ``imports``: the
 * import field names of each symbol kind that names imports (function, global, tag, table),
 * which an undefined symbol without an explicit name takes.
 */
static PyObject *wasm_symbols(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end;
    PyObject *funcs, *globals, *tags, *tables;
    if (!PyArg_ParseTuple(args, "y*nn(O!O!O!O!)", &buf, &start, &end, &PyList_Type, &funcs,
                          &PyList_Type, &globals, &PyList_Type, &tags, &PyList_Type, &tables))
        return NULL;
    PyObject *defined = PyList_New(0), *undefined = PyList_New(0), *exports = PyList_New(0);
    PyObject *weak = PySet_New(NULL), *undef_all = PyList_New(0), *names = PySet_New(NULL);
    PyObject *result = NULL;
    if (!defined || !undefined || !exports || !weak || !undef_all || !names)
        goto fail;
    if (start < 0 || end < start || end > buf.len)
        goto none;
    const unsigned char *b = buf.buf;
    uint64_t v;
    int big;
    Py_ssize_t pos = w_uleb(b, start, end, &v, &big);
    if (pos < 0 || big || v != 2)
        goto none; /* the reference says which: truncated, or an unknown version */
    while (pos < end) {
        const unsigned sub = b[pos++];
        uint64_t size;
        pos = w_uleb(b, pos, end, &size, &big);
        if (pos < 0 || big || size > (uint64_t)(end - pos))
            goto none;
        const Py_ssize_t sub_end = pos + (Py_ssize_t)size;
        if (sub != 8) {
            pos = sub_end;
            continue;
        }
        uint64_t count;
        pos = w_uleb(b, pos, sub_end, &count, &big);
        if (pos < 0 || big || count > (uint64_t)(sub_end - pos) / 2)
            goto none;
        for (uint64_t i = 0; i < count; i++) {
            if (pos >= sub_end)
                goto none;
            const unsigned kind = b[pos++];
            uint64_t flags, index;
            pos = w_uleb(b, pos, sub_end, &flags, &big);
            if (pos < 0)
                goto none;
            const int undef = (flags & 0x10) != 0;
            PyObject *name = NULL;
            if (kind == 0 || kind == 2 || kind == 4 || kind == 5) {
                pos = w_uleb(b, pos, sub_end, &index, &big);
                if (pos < 0)
                    goto none;
                if (!undef || (flags & 0x40)) {
                    name = w_name(b, &pos, sub_end);
                } else {
                    PyObject *list = kind == 0 ? funcs : kind == 2 ? globals
                                                       : kind == 4 ? tags : tables;
                    if (big || index >= (uint64_t)PyList_GET_SIZE(list))
                        goto none;
                    name = Py_NewRef(PyList_GET_ITEM(list, (Py_ssize_t)index));
                }
            } else if (kind == 1) {
                name = w_name(b, &pos, sub_end);
                for (int k = 0; name && !undef && k < 3; k++) {
                    pos = w_skip_leb(b, pos, sub_end);
                    if (pos < 0)
                        Py_CLEAR(name);
                }
            } else if (kind == 3) {
                pos = w_skip_leb(b, pos, sub_end);
                if (pos < 0)
                    goto none;
                continue;
            } else {
                goto none;
            }
            if (name == NULL) {
                if (PyErr_Occurred())
                    goto fail;
                goto none;
            }
            int bad = PySet_Add(names, name);
            if (!bad && undef)
                bad = PyList_Append(undef_all, name);
            if (!bad && !(flags & 0x02)) {
                if (undef) {
                    bad = PyList_Append(undefined, name);
                } else {
                    bad = PyList_Append(defined, name);
                    if (!bad && (flags & 0x01))
                        bad = PySet_Add(weak, name);
                    if (!bad && !(flags & 0x04))
                        bad = PyList_Append(exports, name);
                }
            }
            Py_DECREF(name);
            if (bad)
                goto fail;
        }
        pos = sub_end;
    }
    result = PyTuple_Pack(6, defined, undefined, exports, weak, undef_all, names);
    goto fail;
none:
    result = Py_NewRef(Py_None);
fail:
    Py_XDECREF(defined);
    Py_XDECREF(undefined);
    Py_XDECREF(exports);
    Py_XDECREF(weak);
    Py_XDECREF(undef_all);
    Py_XDECREF(names);
    PyBuffer_Release(&buf);
    return result;
}

/* wasm_data(buf, start, end) -> (segments, passive) | None
 *
 * The data section ``buf[start:end]`` as wasm._parse_data reads it, when every active
 * segment's offset is ``i32.const N end`` or ``i64.const N end`` (nearly every one; an object
 * holds hundreds of segments): how many segments, how many passive (flags 1; flags 2 names a
 * memory). None for anything else: another offset expression (decoded by the reference), a
 * flag after 2, a truncation (the reference says which).
 */
static PyObject *wasm_data(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &buf, &start, &end))
        return NULL;
    PyObject *result = NULL;
    const unsigned char *b = buf.buf;
    uint64_t count, passive = 0;
    int big;
    if (start < 0 || end < start || end > buf.len)
        goto none;
    Py_ssize_t pos = w_count(b, start, end, &count);
    for (uint64_t i = 0; i < count && pos >= 0; i++) {
        uint64_t flags, size;
        pos = w_uleb(b, pos, end, &flags, &big);
        if (pos < 0 || big || flags > 2)
            goto none;
        if (flags == 1) {
            passive++;
        } else {
            if (flags == 2 && (pos = w_skip_leb(b, pos, end)) < 0)
                goto none;
            if (pos >= end || (b[pos] != 0x41 && b[pos] != 0x42))
                goto none;
            pos = w_skip_leb(b, pos + 1, end);
            if (pos < 0 || pos >= end || b[pos] != 0x0B)
                goto none;
            pos++;
        }
        pos = w_uleb(b, pos, end, &size, &big);
        if (pos < 0 || big || size > (uint64_t)(end - pos))
            goto none;
        pos += (Py_ssize_t)size;
    }
    if (pos != end)
        goto none;
    result = Py_BuildValue("(KK)", (unsigned long long)count, (unsigned long long)passive);
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&buf);
    return result;
}

/* wasm_sections(buf, order) -> [(id, name, start, end)] | None
 *
 * A module's sections after its 8-byte header, as wasm._sections lists them: each known
 * section's id, its name (wasm.SECTION_NAMES, given as ``names``) and its payload's bounds;
 * a custom section's name (UTF-8, errors replaced) and the bounds of what follows the name.
 * ``order``: each known id's rank (255: not a known id); the known ones must come in rising
 * rank, each once. None for anything else (an unknown id, a section past the end, a bad
 * LEB): the reference says which.
 */
static PyObject *wasm_sections(PyObject *self, PyObject *args) {
    Py_buffer buf;
    PyObject *names;
    Py_buffer order;
    if (!PyArg_ParseTuple(args, "y*y*O!", &buf, &order, &PyTuple_Type, &names))
        return NULL;
    PyObject *out = PyList_New(0), *result = NULL;
    if (out == NULL)
        goto done;
    const unsigned char *b = buf.buf, *rank = order.buf;
    const Py_ssize_t n = buf.len;
    int last = -1;
    Py_ssize_t pos = 8;
    if (n < 8)
        goto none;
    while (pos < n) {
        const unsigned sid = b[pos];
        uint64_t size;
        int big;
        Py_ssize_t start = w_uleb(b, pos + 1, n, &size, &big);
        if (start < 0 || big || size > (uint64_t)(n - start))
            goto none;
        const Py_ssize_t end = start + (Py_ssize_t)size;
        PyObject *name;
        if (sid == 0) {
            Py_ssize_t p = start;
            name = w_name(b, &p, end);
            if (name == NULL)
                goto none_or_error;
            start = p;
        } else {
            if (sid >= (unsigned)order.len || sid >= (unsigned)PyTuple_GET_SIZE(names) ||
                rank[sid] == 255 || (int)rank[sid] <= last)
                goto none;
            last = rank[sid];
            name = Py_NewRef(PyTuple_GET_ITEM(names, sid));
        }
        PyObject *item = Py_BuildValue("(INnn)", sid, name, start, end);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
        pos = end;
    }
    result = Py_NewRef(out);
    goto done;
none_or_error:
    if (PyErr_Occurred())
        goto done;
none:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(out);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&order);
    return result;
}

/* wasm_locals(buf, start, end) -> (functions, v128_locals, exnref_locals, bodies) | None
 *
 * The code section ``buf[start:end]`` walked as wasm_code.scan_locals walks it: each body's
 * local declarations read (runs of v128 and of exnref counted), its (start of locals, end)
 * kept, and the bodies required to fill the section exactly.
 */
static PyObject *wasm_locals(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &buf, &start, &end))
        return NULL;
    PyObject *bodies = NULL, *result = NULL;
    const unsigned char *b = buf.buf;
    uint64_t count, v128 = 0, exnref = 0;
    int big;
    if (start < 0 || end < start || end > buf.len)
        goto none;
    Py_ssize_t pos = w_uleb(b, start, end, &count, &big);
    if (pos < 0 || big || count > (uint64_t)(end - pos))
        goto none; /* each body takes at least a byte: the reference runs out of section */
    bodies = PyList_New((Py_ssize_t)count);
    if (bodies == NULL)
        goto done;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t size, ndecl;
        pos = w_uleb(b, pos, end, &size, &big);
        if (pos < 0 || big || size == 0 || size > (uint64_t)(end - pos))
            goto none;
        const Py_ssize_t body_end = pos + (Py_ssize_t)size;
        Py_ssize_t p = w_uleb(b, pos, body_end, &ndecl, &big);
        if (p < 0 || big || ndecl > size)
            goto none;
        for (uint64_t d = 0; d < ndecl; d++) {
            p = w_skip_leb(b, p, body_end);
            if (p < 0 || p >= body_end)
                goto none;
            v128 += b[p] == 0x7B;
            exnref += b[p] == 0x69;
            p = w_valtype(b, p, body_end);
            if (p < 0)
                goto none;
        }
        PyObject *extent = Py_BuildValue("(nn)", pos, body_end);
        if (extent == NULL)
            goto done;
        PyList_SET_ITEM(bodies, (Py_ssize_t)i, extent);
        pos = body_end;
    }
    if (pos != end)
        goto none;
    result = Py_BuildValue("(KKKO)", (unsigned long long)count, (unsigned long long)v128,
                           (unsigned long long)exnref, bodies);
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(bodies);
    PyBuffer_Release(&buf);
    return result;
}

/* wasm_imports(buf, start, end, types) -> [(module, field, kind, ...)] | None
 *
 * The import section ``buf[start:end]`` as wasm._parse_imports reads it, each import a tuple
 * of ``Import``'s fields in its order: (module, field, kind) for functions and tags; a memory
 * adds (shared, memory64, False, (min, max or None)); a table (False, memory64, False,
 * (min, max or None), the families of its element type: none for funcref); a global (False,
 * False, mutable, None, the families of its type). ``types``: wasm_code.type_tables().
 */
static PyObject *wasm_imports(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end;
    PyObject *types;
    if (!PyArg_ParseTuple(args, "y*nnO", &buf, &start, &end, &types))
        return NULL;
    PyObject *out = NULL, *result = NULL;
    const unsigned char *b = buf.buf;
    uint64_t count;
    int big;
    type_tables tt;
    if (w_type_tables(types, &tt) < 0)
        goto done;
    if (start < 0 || end < start || end > buf.len)
        goto none;
    Py_ssize_t pos = w_uleb(b, start, end, &count, &big);
    if (pos < 0 || big || count > (uint64_t)(end - pos) / 4)
        goto none;
    out = PyList_New((Py_ssize_t)count);
    if (out == NULL)
        goto done;
    for (uint64_t i = 0; i < count; i++) {
        PyObject *module = w_name(b, &pos, end), *field = NULL, *item = NULL;
        if (module != NULL)
            field = w_name(b, &pos, end);
        if (field == NULL || pos >= end) {
            Py_XDECREF(module);
            Py_XDECREF(field);
            if (PyErr_Occurred())
                goto done;
            goto none;
        }
        const unsigned kind = b[pos++];
        uint64_t flags = 0, lo = 0, hi = 0;
        uint32_t mask = 0;
        int has_hi = 0;
        if (kind == 0) { /* a function: its type index */
            pos = w_skip_leb(b, pos, end);
        } else if (kind == 3) { /* a global: its value type, then mutability (0 or 1) */
            pos = w_valtype_fams(b, pos, end, &tt, 0, &mask);
            if (pos >= 0 && (pos >= end || b[pos] > 1))
                pos = -1;
            if (pos >= 0)
                flags = b[pos++];
        } else if (kind == 4) { /* a tag: its attribute byte and type index */
            pos = pos < end ? w_skip_leb(b, pos + 1, end) : -1;
        } else if (kind == 1 || kind == 2) { /* a table's element type, then limits */
            if (kind == 1) {
                const Py_ssize_t at = pos;
                pos = w_valtype_fams(b, pos, end, &tt, 0, &mask);
                if (pos >= 0 && !(mask & tt.reftype))
                    pos = -1; /* not a reference type: the reference says so */
                if (pos >= 0 && ((pos - at == 1 && b[at] == 0x70) ||
                                 (pos - at == 2 && b[at] == 0x63 && b[at + 1] == 0x70)))
                    mask = 0; /* funcref: a table of functions needs no proposal */
            }
            if (pos >= 0 && pos < end) {
                flags = b[pos++];
                if (flags > 7 || (kind == 1 && (flags & 2)))
                    pos = -1; /* custom page sizes, shared tables: the reference says so */
                if (pos >= 0)
                    pos = w_uleb(b, pos, end, &lo, &big);
                if (pos >= 0 && big)
                    pos = -1;
                if (pos >= 0 && (flags & 1)) {
                    has_hi = 1;
                    pos = w_uleb(b, pos, end, &hi, &big);
                    if (pos >= 0 && big)
                        pos = -1;
                }
            } else {
                pos = -1;
            }
        } else {
            pos = -1; /* an unknown kind: the reference names it */
        }
        if (pos < 0) {
            Py_DECREF(module);
            Py_DECREF(field);
            goto none;
        }
        if (kind == 1 || kind == 2) {
            PyObject *max = has_hi ? PyLong_FromUnsignedLongLong(hi) : Py_NewRef(Py_None);
            item = max == NULL ? NULL
                               : Py_BuildValue("(NNIOOO(KN)I)", module, field, kind,
                                               (kind == 2 && (flags & 2)) ? Py_True : Py_False,
                                               (flags & 4) ? Py_True : Py_False, Py_False,
                                               (unsigned long long)lo, max, (unsigned)mask);
        } else if (kind == 3) {
            item = Py_BuildValue("(NNIOOOOI)", module, field, kind, Py_False, Py_False,
                                 flags == 1 ? Py_True : Py_False, Py_None, (unsigned)mask);
        } else {
            item = Py_BuildValue("(NNI)", module, field, kind);
        }
        if (item == NULL)
            goto done;
        PyList_SET_ITEM(out, (Py_ssize_t)i, item);
    }
    result = Py_NewRef(out);
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(out);
    PyBuffer_Release(&buf);
    return result;
}

/* One type slot of the type section: its families counted, v128 and exnref apart; -1. */
static inline Py_ssize_t w_type_slot(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end,
                                     const type_tables *tt, int packed, uint64_t *counts,
                                     uint64_t *v128, uint64_t *exnref, uint32_t exnref_bit) {
    uint32_t mask;
    const Py_ssize_t at = pos;
    pos = w_valtype_fams(b, pos, end, tt, packed, &mask);
    if (pos < 0)
        return -1;
    w_add(counts, mask);
    *v128 += b[at] == 0x7B;
    *exnref += (mask & exnref_bit) != 0;
    return pos;
}

/* wasm_types(buf, start, end, types) -> (types, v128, exnref, multivalue, recs, subtypes,
 *                                        structs, arrays, family counts) | None
 *
 * The type section ``buf[start:end]`` as wasm.parse_types reads it: rec groups of subtypes of
 * function, struct and array types, every value type's families counted (``types``:
 * wasm_code.type_tables()); the v128 and exnref slots, function types with several results,
 * and the GC definitions counted apart. None for anything the reference would word (a
 * truncation, a form after 3.0). */
static PyObject *wasm_types(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end;
    PyObject *types;
    if (!PyArg_ParseTuple(args, "y*nnO", &buf, &start, &end, &types))
        return NULL;
    PyObject *result = NULL;
    const unsigned char *b = buf.buf;
    uint64_t groups, ntypes = 0, v128 = 0, exnref = 0, multi = 0, recs = 0, subs = 0;
    uint64_t structs = 0, arrays = 0, counts[W_FAMILIES] = {0};
    int big;
    type_tables tt;
    if (w_type_tables(types, &tt) < 0)
        goto done;
    /* the exnref bit: what 0x69 names beside ``reftype`` */
    const uint32_t exnref_bit = rd32le(tt.vt + 4 * 0x69) & ~tt.reftype;
    if (start < 0 || end < start || end > buf.len)
        goto none;
    Py_ssize_t pos = w_count(b, start, end, &groups);
    if (pos < 0)
        goto none;
    for (uint64_t g = 0; g < groups; g++) {
        if (pos >= end)
            goto none;
        unsigned form = b[pos++];
        uint64_t members = 1;
        int rec = form == 0x4E;
        if (rec) {
            recs++;
            pos = w_count(b, pos, end, &members);
            if (pos < 0)
                goto none;
        }
        for (uint64_t k = 0; k < members; k++) {
            if (rec) {
                if (pos >= end)
                    goto none;
                form = b[pos++];
            }
            if (form == 0x50 || form == 0x4F) {
                uint64_t supers;
                pos = w_count(b, pos, end, &supers);
                for (uint64_t s = 0; s < supers && pos >= 0; s++)
                    pos = w_skip_leb(b, pos, end);
                if (pos < 0 || pos >= end)
                    goto none;
                subs += form == 0x50 || supers;
                form = b[pos++];
            }
            ntypes++;
            if (form == 0x60) {
                for (int part = 0; part < 2; part++) {
                    uint64_t n;
                    pos = w_count(b, pos, end, &n);
                    for (uint64_t i = 0; i < n && pos >= 0; i++)
                        pos = w_type_slot(b, pos, end, &tt, 0, counts, &v128, &exnref,
                                          exnref_bit);
                    if (pos < 0)
                        goto none;
                    multi += part && n > 1;
                }
            } else if (form == 0x5F || form == 0x5E) {
                uint64_t n = 1;
                if (form == 0x5F) {
                    structs++;
                    pos = w_uleb(b, pos, end, &n, &big);
                    if (pos < 0 || big || n > (uint64_t)(end - pos) / 2)
                        goto none;
                } else {
                    arrays++;
                }
                for (uint64_t i = 0; i < n && pos >= 0; i++) {
                    pos = w_type_slot(b, pos, end, &tt, 1, counts, &v128, &exnref, exnref_bit);
                    pos = pos >= 0 && pos < end ? pos + 1 : -1; /* mutability */
                }
                if (pos < 0)
                    goto none;
            } else {
                goto none; /* a form after 3.0: the reference says which */
            }
        }
    }
    PyObject *fams = w_counts(counts, W_FAMILIES);
    if (fams == NULL)
        goto done;
    result = Py_BuildValue("(KKKKKKKKN)", (unsigned long long)ntypes, (unsigned long long)v128,
                           (unsigned long long)exnref, (unsigned long long)multi,
                           (unsigned long long)recs, (unsigned long long)subs,
                           (unsigned long long)structs, (unsigned long long)arrays, fams);
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"probe", probe, METH_VARARGS, "Whether a candidate name followed by a NUL is in a table."},
    {"occurs", occurs, METH_VARARGS, "A bit per needle found in a buffer."},
    {"first_type", first_type, METH_VARARGS, "The first section header of a type, or -1."},
    {"named", named, METH_VARARGS, "Every section header whose name is a given one."},
    {"object_symbols", object_symbols, METH_VARARGS, "An object's global symbols."},
    {"count_byte", count_byte, METH_VARARGS, "How often a byte occurs from an offset on."},
    {"dangling", dangling, METH_VARARGS, "Distinct index offsets that are not member heads."},
    {"fill_demangled", fill_demangled, METH_VARARGS, "Demangle the names a cache lacks."},
    {"wasm_deep_scan", wasm_deep_scan, METH_VARARGS, "Every wasm body's families, or None."},
    {"wasm_symbols", wasm_symbols, METH_VARARGS, "A wasm object's symbol table, or None."},
    {"wasm_locals", wasm_locals, METH_VARARGS, "A code section's bodies and locals, or None."},
    {"wasm_sections", wasm_sections, METH_VARARGS, "A wasm module's sections, or None."},
    {"wasm_data", wasm_data, METH_VARARGS, "A wasm data section's plain segments, or None."},
    {"wasm_imports", wasm_imports, METH_VARARGS, "A wasm import section, or None."},
    {"wasm_types", wasm_types, METH_VARARGS, "A wasm type section's counts, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "prebake.inspect._scan", "The readers' hot loops in C.", -1,
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
