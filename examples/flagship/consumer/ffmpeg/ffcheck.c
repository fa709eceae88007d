/* ffcheck: a consumer of FFmpeg's libraries, run on every platform.
 *
 *   ffcheck IN.wav OUT.flac [THREADS]
 *
 * 1. opens IN.wav with libavformat, decodes it with libavcodec (pcm_s16le);
 * 2. encodes the samples with the FLAC encoder, muxes them into OUT.flac (flac muxer, file
 *    protocol), opens that file again (flac demuxer + parser), decodes it with the FLAC decoder
 *    (THREADS decoder threads, default 1) and compares every sample;
 * 3. converts the samples with libswresample: s16 interleaved -> float planar (exact: s/32768),
 *    and 44100 Hz -> 48000 Hz;
 * 4. converts a generated RGB24 image to YUV420P with libswscale.
 *
 * Prints key=value lines; check.py compares them with Python's own numbers. Exit code 0 when
 * every FFmpeg call succeeded (the numbers are judged by check.py), 1 otherwise.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavcodec/version.h>
#include <libavformat/avformat.h>
#include <libavformat/version.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/crc.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <libswresample/version.h>
#include <libswscale/swscale.h>
#include <libswscale/version.h>

#define FAIL(...) do { fprintf(stderr, "ffcheck: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(call) do { int r_ = (call); if (r_ < 0) { char e_[128]; av_strerror(r_, e_, sizeof e_); \
    FAIL("%s failed: %s", #call, e_); } } while (0)

static uint32_t crc32_of(const void *buf, size_t len) {
    /* zlib's crc32: reflected IEEE polynomial, init and final xor 0xFFFFFFFF */
    return av_crc(av_crc_get_table(AV_CRC_32_IEEE_LE), 0xFFFFFFFFu, buf, len) ^ 0xFFFFFFFFu;
}

/* growable buffer of interleaved s16 samples */
typedef struct { int16_t *s; size_t n, cap; } Samples;

static void push(Samples *b, const int16_t *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->s = realloc(b->s, b->cap * sizeof *b->s);
        if (!b->s) FAIL("out of memory");
    }
    memcpy(b->s + b->n, src, n * sizeof *src);
    b->n += n;
}

/* decode every audio packet of PATH into interleaved s16; returns the channel count */
static int decode_file(const char *path, Samples *out, int *rate, int threads,
                       const char **fmt_name, const char **codec_name) {
    AVFormatContext *fc = NULL;
    CHECK(avformat_open_input(&fc, path, NULL, NULL));
    CHECK(avformat_find_stream_info(fc, NULL));
    int si = av_find_best_stream(fc, AVMEDIA_TYPE_AUDIO, -1, -1, NULL, 0);
    if (si < 0) FAIL("%s: no audio stream", path);
    AVStream *st = fc->streams[si];
    const AVCodec *dec = avcodec_find_decoder(st->codecpar->codec_id);
    if (!dec) FAIL("%s: no decoder for %s", path, avcodec_get_name(st->codecpar->codec_id));
    AVCodecContext *cc = avcodec_alloc_context3(dec);
    CHECK(avcodec_parameters_to_context(cc, st->codecpar));
    cc->thread_count = threads;
    CHECK(avcodec_open2(cc, dec, NULL));
    *fmt_name = fc->iformat->name;
    *codec_name = dec->name;
    *rate = cc->sample_rate;
    int ch = cc->ch_layout.nb_channels;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *fr = av_frame_alloc();
    int eof = 0;
    while (!eof) {
        int r = av_read_frame(fc, pkt);
        if (r == AVERROR_EOF) { eof = 1; CHECK(avcodec_send_packet(cc, NULL)); }
        else { CHECK(r); if (pkt->stream_index == si) CHECK(avcodec_send_packet(cc, pkt)); av_packet_unref(pkt); }
        for (;;) {
            r = avcodec_receive_frame(cc, fr);
            if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) break;
            CHECK(r);
            if (fr->format != AV_SAMPLE_FMT_S16)
                FAIL("%s: decoder gives %s, not s16", path, av_get_sample_fmt_name(fr->format));
            push(out, (const int16_t *)fr->data[0], (size_t)fr->nb_samples * ch);
            av_frame_unref(fr);
        }
    }
    av_frame_free(&fr);
    av_packet_free(&pkt);
    avcodec_free_context(&cc);
    avformat_close_input(&fc);
    return ch;
}

static void flac_write(const char *path, const Samples *in, int ch, int rate, long *packets) {
    AVFormatContext *oc = NULL;
    CHECK(avformat_alloc_output_context2(&oc, NULL, "flac", path));
    const AVCodec *enc = avcodec_find_encoder(AV_CODEC_ID_FLAC);
    if (!enc) FAIL("no FLAC encoder");
    AVCodecContext *cc = avcodec_alloc_context3(enc);
    cc->sample_fmt = AV_SAMPLE_FMT_S16;
    cc->sample_rate = rate;
    av_channel_layout_default(&cc->ch_layout, ch);
    cc->time_base = (AVRational){1, rate};
    if (oc->oformat->flags & AVFMT_GLOBALHEADER) cc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    CHECK(avcodec_open2(cc, enc, NULL));
    AVStream *st = avformat_new_stream(oc, NULL);
    if (!st) FAIL("avformat_new_stream");
    CHECK(avcodec_parameters_from_context(st->codecpar, cc));
    st->time_base = cc->time_base;
    CHECK(avio_open(&oc->pb, path, AVIO_FLAG_WRITE));
    CHECK(avformat_write_header(oc, NULL));
    AVFrame *fr = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    size_t total = in->n / ch, pos = 0;
    *packets = 0;
    for (;;) {
        if (pos < total) {
            int n = cc->frame_size;
            if ((size_t)n > total - pos) n = (int)(total - pos);
            fr->nb_samples = n;
            fr->format = cc->sample_fmt;
            fr->sample_rate = rate;
            CHECK(av_channel_layout_copy(&fr->ch_layout, &cc->ch_layout));
            CHECK(av_frame_get_buffer(fr, 0));
            memcpy(fr->data[0], in->s + pos * ch, (size_t)n * ch * sizeof(int16_t));
            fr->pts = (int64_t)pos;
            pos += (size_t)n;
            CHECK(avcodec_send_frame(cc, fr));
            av_frame_unref(fr);
        } else {
            CHECK(avcodec_send_frame(cc, NULL));
        }
        int r;
        while ((r = avcodec_receive_packet(cc, pkt)) >= 0) {
            av_packet_rescale_ts(pkt, cc->time_base, st->time_base);
            pkt->stream_index = st->index;
            CHECK(av_interleaved_write_frame(oc, pkt));
            ++*packets;
        }
        if (r == AVERROR_EOF) break;
        if (r != AVERROR(EAGAIN)) CHECK(r);
    }
    /* the flac muxer rewrites STREAMINFO (with the encoder's MD5 of the samples) here */
    CHECK(av_write_trailer(oc));
    CHECK(avio_closep(&oc->pb));
    av_packet_free(&pkt);
    av_frame_free(&fr);
    avcodec_free_context(&cc);
    avformat_free_context(oc);
}

static void resample(const Samples *in, int ch, int rate) {
    AVChannelLayout lay;
    av_channel_layout_default(&lay, ch);
    size_t n = in->n / ch;
    /* s16 interleaved -> float planar at the same rate: exact (s / 32768) */
    SwrContext *swr = NULL;
    CHECK(swr_alloc_set_opts2(&swr, &lay, AV_SAMPLE_FMT_FLTP, rate, &lay, AV_SAMPLE_FMT_S16, rate, 0, NULL));
    CHECK(swr_init(swr));
    float **planes = calloc((size_t)ch, sizeof *planes);
    for (int c = 0; c < ch; c++) planes[c] = malloc(n * sizeof(float));
    const uint8_t *src[1] = {(const uint8_t *)in->s};
    int got = swr_convert(swr, (uint8_t **)planes, (int)n, src, (int)n);
    CHECK(got);
    int more = swr_convert(swr, (uint8_t **)planes, 0, NULL, 0);  /* flush: nothing left */
    CHECK(more);
    printf("swr.fltp.samples=%d\n", got + more);
    for (int c = 0; c < ch; c++)
        printf("swr.fltp.crc32.ch%d=%08x\n", c, (unsigned)crc32_of(planes[c], (size_t)got * sizeof(float)));
    swr_free(&swr);

    /* 44100 -> 48000 Hz, float planar: the count and each channel's RMS */
    const int out_rate = 48000;
    CHECK(swr_alloc_set_opts2(&swr, &lay, AV_SAMPLE_FMT_FLTP, out_rate, &lay, AV_SAMPLE_FMT_S16, rate, 0, NULL));
    CHECK(swr_init(swr));
    int cap = (int)av_rescale_rnd((int64_t)n, out_rate, rate, AV_ROUND_UP) + 256;
    for (int c = 0; c < ch; c++) planes[c] = realloc(planes[c], (size_t)cap * sizeof(float));
    got = swr_convert(swr, (uint8_t **)planes, cap, src, (int)n);
    CHECK(got);
    float **tail = calloc((size_t)ch, sizeof *tail);
    for (int c = 0; c < ch; c++) tail[c] = planes[c] + got;
    more = swr_convert(swr, (uint8_t **)tail, cap - got, NULL, 0);
    CHECK(more);
    int total = got + more;
    printf("swr.48k.samples=%d\n", total);
    for (int c = 0; c < ch; c++) {
        double sq = 0;
        for (int i = 0; i < total; i++) sq += (double)planes[c][i] * planes[c][i];
        printf("swr.48k.rms.ch%d=%.6f\n", c, total ? sqrt(sq / total) : 0.0);
    }
    swr_free(&swr);
    for (int c = 0; c < ch; c++) free(planes[c]);
    free(planes);
    free(tail);
    av_channel_layout_uninit(&lay);
}

static void print_hex(const char *key, const uint8_t *p, int w, int h, int stride) {
    printf("%s=", key);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) printf("%02x", p[y * stride + x]);
    printf("\n");
}

static void scale(void) {
    /* a smooth RGB24 gradient check.py regenerates: R = 4x, G = 5y, B = 2(x+y) */
    enum { W = 64, H = 48 };
    uint8_t *rgb[4], *yuv[4];
    int rgb_ls[4], yuv_ls[4];
    CHECK(av_image_alloc(rgb, rgb_ls, W, H, AV_PIX_FMT_RGB24, 16));
    CHECK(av_image_alloc(yuv, yuv_ls, W, H, AV_PIX_FMT_YUV420P, 16));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = rgb[0] + y * rgb_ls[0] + 3 * x;
            p[0] = (uint8_t)(4 * x); p[1] = (uint8_t)(5 * y); p[2] = (uint8_t)(2 * (x + y));
        }
    struct SwsContext *sws = sws_getContext(W, H, AV_PIX_FMT_RGB24, W, H, AV_PIX_FMT_YUV420P,
                                            SWS_BILINEAR | SWS_ACCURATE_RND, NULL, NULL, NULL);
    if (!sws) FAIL("sws_getContext RGB24->YUV420P");
    int h = sws_scale(sws, (const uint8_t *const *)rgb, rgb_ls, 0, H, yuv, yuv_ls);
    if (h != H) FAIL("sws_scale gave %d rows", h);
    printf("sws.w=%d\nsws.h=%d\n", W, H);
    print_hex("sws.y", yuv[0], W, H, yuv_ls[0]);
    print_hex("sws.u", yuv[1], W / 2, H / 2, yuv_ls[1]);
    print_hex("sws.v", yuv[2], W / 2, H / 2, yuv_ls[2]);
    sws_freeContext(sws);
    av_freep(&rgb[0]);
    av_freep(&yuv[0]);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: ffcheck IN.wav OUT.flac [THREADS]\n"); return 2; }
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    av_log_set_level(AV_LOG_ERROR);

    unsigned v;
    v = avutil_version();     printf("avutil.version=%u.%u.%u\n", v >> 16, (v >> 8) & 255, v & 255);
    v = avcodec_version();    printf("avcodec.version=%u.%u.%u\n", v >> 16, (v >> 8) & 255, v & 255);
    v = avformat_version();   printf("avformat.version=%u.%u.%u\n", v >> 16, (v >> 8) & 255, v & 255);
    v = swresample_version(); printf("swresample.version=%u.%u.%u\n", v >> 16, (v >> 8) & 255, v & 255);
    v = swscale_version();    printf("swscale.version=%u.%u.%u\n", v >> 16, (v >> 8) & 255, v & 255);
    /* each library's version as its headers say and as the library itself reports it */
    printf("headers.avutil=%d.%d.%d\n", LIBAVUTIL_VERSION_MAJOR, LIBAVUTIL_VERSION_MINOR, LIBAVUTIL_VERSION_MICRO);
    printf("headers.avcodec=%d.%d.%d\n", LIBAVCODEC_VERSION_MAJOR, LIBAVCODEC_VERSION_MINOR, LIBAVCODEC_VERSION_MICRO);
    printf("headers.avformat=%d.%d.%d\n", LIBAVFORMAT_VERSION_MAJOR, LIBAVFORMAT_VERSION_MINOR, LIBAVFORMAT_VERSION_MICRO);
    printf("headers.swresample=%d.%d.%d\n", LIBSWRESAMPLE_VERSION_MAJOR, LIBSWRESAMPLE_VERSION_MINOR, LIBSWRESAMPLE_VERSION_MICRO);
    printf("headers.swscale=%d.%d.%d\n", LIBSWSCALE_VERSION_MAJOR, LIBSWSCALE_VERSION_MINOR, LIBSWSCALE_VERSION_MICRO);
    printf("ffmpeg.version=%s\n", av_version_info());
    printf("license=%s\n", avutil_license());
    printf("license.avcodec=%s\n", avcodec_license());
    printf("configuration=%s\n", avutil_configuration());

    Samples wav = {0};
    int rate;
    const char *fmt, *codec;
    int ch = decode_file(argv[1], &wav, &rate, 1, &fmt, &codec);
    printf("wav.format=%s\nwav.codec=%s\nwav.rate=%d\nwav.channels=%d\nwav.samples=%zu\n",
           fmt, codec, rate, ch, wav.n / ch);
    printf("wav.crc32=%08x\n", (unsigned)crc32_of(wav.s, wav.n * sizeof(int16_t)));

    long packets;
    flac_write(argv[2], &wav, ch, rate, &packets);
    Samples back = {0};
    int rate2;
    int ch2 = decode_file(argv[2], &back, &rate2, threads, &fmt, &codec);
    size_t mism = 0;
    size_t n = back.n < wav.n ? back.n : wav.n;
    for (size_t i = 0; i < n; i++) mism += back.s[i] != wav.s[i];
    mism += (back.n > wav.n ? back.n - wav.n : wav.n - back.n);
    printf("flac.packets=%ld\nflac.format=%s\nflac.codec=%s\nflac.threads=%d\n", packets, fmt, codec, threads);
    printf("flac.rate=%d\nflac.channels=%d\nflac.samples=%zu\nflac.mismatches=%zu\n", rate2, ch2, back.n / ch2, mism);
    printf("flac.crc32=%08x\n", (unsigned)crc32_of(back.s, back.n * sizeof(int16_t)));

    resample(&wav, ch, rate);
    scale();
    printf("done=1\n");
    free(wav.s);
    free(back.s);
    return 0;
}
