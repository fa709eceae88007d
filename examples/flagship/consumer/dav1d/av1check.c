/* av1check: a consumer of dav1d's library, run on every platform.
 *
 *   av1check IN.ivf [THREADS]
 *
 * Reads an AV1 stream from an IVF file (a 32-byte file header, then per frame a 12-byte header:
 * size, timestamp; parsed here, every length bounded by what is left of the file), decodes
 * every frame with dav1d (dav1d_open; dav1d_send_data / dav1d_get_picture until the input is
 * used up, then until the decoder is drained), then dav1d_flush and the whole stream again,
 * which must give the same numbers. THREADS is dav1d's n_threads (default 1; 0 = one per core).
 *
 * Prints key=value lines; check.py compares them with the reference decoder's:
 *   frame.N=WxH Bbit LAYOUT HASH  each picture in output order
 *   frames=N                      pictures output
 *   size=WxH                      the first picture's size ("mixed" if any differs)
 *   checksum=HASH                 FNV-1a 64 over every picture: its Y rows, then U, then V
 *                                 (none for 4:0:0), each row exactly the plane's width in
 *                                 samples (1 byte a sample at 8 bits, 2 little-endian above)
 * Exit code 0 when the file was read, every frame decoded and the second pass agreed; 1 on any
 * error (the numbers are judged by check.py); 2 on bad arguments.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dav1d/dav1d.h>

#define FAIL(...) do { fprintf(stderr, "av1check: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)
/* no AV1 stream this program is given comes near it; a bigger file is refused, not read */
#define MAX_FILE (64L * 1024 * 1024)

typedef struct { const uint8_t *data; size_t size; } Frame;
typedef struct { uint8_t *bytes; Frame *frames; size_t n; unsigned width, height; } Ivf;

typedef struct {
    uint64_t total;
    long frames;
    int w, h, mixed;
    int print;  /* print each picture's line (the first pass) */
} Tally;

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }

static Ivf read_ivf(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) FAIL("%s: %s", path, strerror(errno));
    Ivf ivf = {0};
    size_t cap = 1 << 16, len = 0;
    ivf.bytes = malloc(cap);
    for (;;) {
        if (len == cap) {
            if (cap >= (size_t)MAX_FILE) FAIL("%s: larger than %ld bytes", path, MAX_FILE);
            cap *= 2;
            ivf.bytes = realloc(ivf.bytes, cap);
        }
        if (!ivf.bytes) FAIL("out of memory");
        size_t got = fread(ivf.bytes + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) FAIL("%s: read error", path);
    fclose(f);
    if (len < 32 || memcmp(ivf.bytes, "DKIF", 4) != 0) FAIL("%s: not an IVF file", path);
    uint32_t header = le16(ivf.bytes + 6);
    if (memcmp(ivf.bytes + 8, "AV01", 4) != 0) FAIL("%s: IVF of %.4s, not AV01", path, ivf.bytes + 8);
    if (header < 32 || header > len) FAIL("%s: IVF header length %u", path, (unsigned)header);
    ivf.width = le16(ivf.bytes + 12);
    ivf.height = le16(ivf.bytes + 14);
    size_t pos = header, cap_frames = 0;
    while (pos < len) {
        if (len - pos < 12) FAIL("%s: frame header cut at byte %zu", path, pos);
        size_t size = le32(ivf.bytes + pos);
        pos += 12;
        if (size == 0 || size > len - pos)
            FAIL("%s: frame %zu of %zu bytes at byte %zu, %zu left", path, ivf.n, size, pos, len - pos);
        if (ivf.n == cap_frames) {
            cap_frames = cap_frames ? 2 * cap_frames : 64;
            ivf.frames = realloc(ivf.frames, cap_frames * sizeof *ivf.frames);
            if (!ivf.frames) FAIL("out of memory");
        }
        ivf.frames[ivf.n++] = (Frame){ivf.bytes + pos, size};
        pos += size;
    }
    if (ivf.n == 0) FAIL("%s: no frame", path);
    return ivf;
}

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

/* one row of W samples: as bytes at 8 bits, each sample's low byte then its high byte above */
static void hash_row(uint64_t *one, uint64_t *total, const uint8_t *row, int w, int bpc) {
    if (bpc == 8) {
        *one = fnv1a(*one, row, (size_t)w);
        *total = fnv1a(*total, row, (size_t)w);
        return;
    }
    const uint16_t *s = (const uint16_t *)row;
    for (int x = 0; x < w; x++) {
        uint8_t le[2] = {(uint8_t)(s[x] & 255), (uint8_t)(s[x] >> 8)};
        *one = fnv1a(*one, le, 2);
        *total = fnv1a(*total, le, 2);
    }
}

static void picture(Tally *t, const Dav1dPicture *p) {
    static const char *layouts[] = {"400", "420", "422", "444"};
    int w = p->p.w, h = p->p.h, bpc = p->p.bpc;
    enum Dav1dPixelLayout layout = p->p.layout;
    if (w <= 0 || h <= 0 || (bpc != 8 && bpc != 10 && bpc != 12) || layout < DAV1D_PIXEL_LAYOUT_I400
        || layout > DAV1D_PIXEL_LAYOUT_I444)
        FAIL("picture %ld: %dx%d, %d bits, layout %d", t->frames, w, h, bpc, (int)layout);
    uint64_t one = FNV_OFFSET;
    for (int y = 0; y < h; y++)
        hash_row(&one, &t->total, (const uint8_t *)p->data[0] + y * p->stride[0], w, bpc);
    if (layout != DAV1D_PIXEL_LAYOUT_I400) {
        int ss_hor = layout != DAV1D_PIXEL_LAYOUT_I444, ss_ver = layout == DAV1D_PIXEL_LAYOUT_I420;
        int cw = (w + ss_hor) >> ss_hor, ch = (h + ss_ver) >> ss_ver;
        for (int c = 1; c <= 2; c++)
            for (int y = 0; y < ch; y++)
                hash_row(&one, &t->total, (const uint8_t *)p->data[c] + y * p->stride[1], cw, bpc);
    }
    if (t->frames == 0) { t->w = w; t->h = h; }
    else if (w != t->w || h != t->h) t->mixed = 1;
    if (t->print)
        printf("frame.%ld=%dx%d %dbit %s %016" PRIx64 "\n", t->frames, w, h, bpc, layouts[layout], one);
    t->frames++;
}

/* the next picture if there is one (1), none yet (0); any other answer is an error */
static int next_picture(Dav1dContext *c, Tally *t) {
    Dav1dPicture p;
    memset(&p, 0, sizeof p);
    int r = dav1d_get_picture(c, &p);
    if (r == DAV1D_ERR(EAGAIN)) return 0;
    if (r < 0) FAIL("dav1d_get_picture: error %d (%s)", r, strerror(-r));
    picture(t, &p);
    dav1d_picture_unref(&p);
    return 1;
}

static Tally decode(Dav1dContext *c, const Ivf *ivf, int print) {
    Tally t = {FNV_OFFSET, 0, 0, 0, 0, print};
    for (size_t i = 0; i < ivf->n; i++) {
        Dav1dData data;
        uint8_t *buf = dav1d_data_create(&data, ivf->frames[i].size);
        if (!buf) FAIL("dav1d_data_create(%zu)", ivf->frames[i].size);
        memcpy(buf, ivf->frames[i].data, ivf->frames[i].size);
        do {  /* the decoder takes the data when it has room: take pictures out until it does */
            int r = dav1d_send_data(c, &data);
            if (r < 0 && r != DAV1D_ERR(EAGAIN))
                FAIL("dav1d_send_data (IVF frame %zu): error %d (%s)", i, r, strerror(-r));
            next_picture(c, &t);
        } while (data.sz > 0);
    }
    while (next_picture(c, &t)) {}  /* the input used up: drain the decoder */
    return t;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) { fprintf(stderr, "usage: av1check IN.ivf [THREADS]\n"); return 2; }
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 0 || threads > 256) { fprintf(stderr, "av1check: THREADS %s\n", argv[2]); return 2; }
    unsigned api = dav1d_version_api();
    printf("dav1d.version=%s\n", dav1d_version());
    printf("dav1d.api=%u.%u.%u\n", api >> 16, (api >> 8) & 255, api & 255);
    printf("headers.api=%d.%d.%d\n", DAV1D_API_VERSION_MAJOR, DAV1D_API_VERSION_MINOR,
           DAV1D_API_VERSION_PATCH);
    Ivf ivf = read_ivf(argv[1]);
    printf("ivf.size=%ux%u\nivf.frames=%zu\n", ivf.width, ivf.height, ivf.n);

    Dav1dSettings s;
    dav1d_default_settings(&s);
    s.n_threads = threads;
    s.logger.callback = NULL;  /* dav1d's messages would go to stderr; its errors are returned */
    Dav1dContext *c = NULL;
    int r = dav1d_open(&c, &s);
    if (r < 0) FAIL("dav1d_open: error %d (%s)", r, strerror(-r));
    printf("threads=%d\n", threads);
    Tally first = decode(c, &ivf, 1);
    /* as a player seeking back to the start: the decoder emptied, the stream again */
    dav1d_flush(c);
    Tally again = decode(c, &ivf, 0);
    dav1d_close(&c);
    if (first.frames == 0) FAIL("%s: no picture decoded", argv[1]);
    printf("frames=%ld\n", first.frames);
    if (first.mixed) printf("size=mixed\n");
    else printf("size=%dx%d\n", first.w, first.h);
    printf("checksum=%016" PRIx64 "\n", first.total);
    int same = again.frames == first.frames && again.total == first.total;
    printf("again=%s\n", same ? "identical" : "differs");
    if (!same) FAIL("after dav1d_flush: %ld pictures, checksum %016" PRIx64, again.frames, again.total);
    printf("done=1\n");
    free(ivf.frames);
    free(ivf.bytes);
    return 0;
}
