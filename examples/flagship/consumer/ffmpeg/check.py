#!/usr/bin/env python3
"""Check ffcheck's output against Python's own numbers (standard library only).

    check.py OUTPUT.txt OUT.flac [--license "LGPL version 2.1 or later"] [--version 7.1.5]

OUTPUT.txt is ffcheck's stdout; OUT.flac the file it wrote. Prints one line per check and
exits 1 if any fails.
"""
import argparse
import hashlib
import math
import struct
import sys
import zlib

from make_wav import RATE, pcm_bytes, signal


def parse(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def yuv_expected(w: int, h: int) -> tuple[list[float], list[float], list[float]]:
    """BT.601 limited range (swscale's default for RGB -> YUV), chroma averaged over 2x2."""
    def rgb(x: int, y: int) -> tuple[int, int, int]:
        return (4 * x) & 255, (5 * y) & 255, (2 * (x + y)) & 255

    def yv(r: float, g: float, b: float) -> float:
        return 16 + (0.299 * r + 0.587 * g + 0.114 * b) * 219 / 255

    def uv(r: float, g: float, b: float) -> tuple[float, float]:
        return (128 + (-0.168736 * r - 0.331264 * g + 0.5 * b) * 224 / 255,
                128 + (0.5 * r - 0.418688 * g - 0.081312 * b) * 224 / 255)

    ys = [yv(*rgb(x, y)) for y in range(h) for x in range(w)]
    us, vs = [], []
    for y in range(0, h, 2):
        for x in range(0, w, 2):
            px = [rgb(x + dx, y + dy) for dy in (0, 1) for dx in (0, 1)]
            r, g, b = (sum(p[i] for p in px) / 4 for i in range(3))
            u, v = uv(r, g, b)
            us.append(u)
            vs.append(v)
    return ys, us, vs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("flac")
    ap.add_argument("--license", default="LGPL version 2.1 or later")
    ap.add_argument("--version", default=None, help="FFmpeg release, e.g. 7.1.5")
    a = ap.parse_args()
    got = parse(open(a.output, encoding="utf-8", errors="replace").read())
    frames = signal()
    pcm = pcm_bytes(frames)
    results: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        results.append((name, ok, detail))

    check("done", got.get("done") == "1", "ffcheck ran to the end")
    check("license", got.get("license") == a.license and got.get("license.avcodec") == a.license,
          f"{got.get('license')!r}")
    if a.version:
        check("version", got.get("ffmpeg.version") == a.version, got.get("ffmpeg.version", ""))
    for lib in ("avutil", "avcodec", "avformat", "swresample", "swscale"):
        check(f"headers=library.{lib}", got.get(f"headers.{lib}") == got.get(f"{lib}.version")
              and bool(got.get(f"{lib}.version")),
              f"{got.get(f'headers.{lib}')} vs {got.get(f'{lib}.version')}")
    # the configure line FFmpeg compiled in names no folder of the machine that built it
    conf = got.get("configuration", "")
    check("configuration", bool(conf) and not any(w.split("=", 1)[-1].startswith("/")
                                                  for w in conf.split()), conf[:80])
    # 1. WAV decoded by libavformat + libavcodec
    check("wav.decode", (got.get("wav.format"), got.get("wav.codec"), got.get("wav.rate"),
                         got.get("wav.channels"), got.get("wav.samples"))
          == ("wav", "pcm_s16le", str(RATE), "2", str(len(frames))))
    check("wav.crc32", got.get("wav.crc32") == f"{zlib.crc32(pcm):08x}")
    # 2. FLAC round trip: every sample back, and the encoder's STREAMINFO MD5 = md5(pcm)
    check("flac.lossless", got.get("flac.mismatches") == "0" and got.get("flac.samples") == str(len(frames))
          and got.get("flac.crc32") == f"{zlib.crc32(pcm):08x}" and got.get("flac.codec") == "flac")
    data = open(a.flac, "rb").read()
    ok = data[:4] == b"fLaC" and (data[4] & 0x7F) == 0
    md5 = data[8 + 18:8 + 34] if ok else b""
    check("flac.streaminfo.md5", md5 == hashlib.md5(pcm).digest(), md5.hex())
    # 3. swresample: s16 -> fltp exact, 44.1k -> 48k count and RMS
    for c in range(2):
        want = zlib.crc32(b"".join(struct.pack("<f", f[c] / 32768) for f in frames))
        check(f"swr.fltp.ch{c}", got.get(f"swr.fltp.crc32.ch{c}") == f"{want:08x}")
    n48 = int(got.get("swr.48k.samples", "0"))
    want48 = len(frames) * 48000 // RATE
    check("swr.48k.samples", abs(n48 - want48) <= 32, f"{n48} vs {want48}")
    for c in range(2):
        rms = math.sqrt(sum((f[c] / 32768) ** 2 for f in frames) / len(frames))
        g = float(got.get(f"swr.48k.rms.ch{c}", "nan"))
        check(f"swr.48k.rms.ch{c}", abs(g - rms) <= 0.005 * rms, f"{g:.6f} vs {rms:.6f}")
    # 4. swscale: RGB24 -> YUV420P within +-1 (luma) / +-2 (chroma) of BT.601
    w, h = int(got.get("sws.w", "0")), int(got.get("sws.h", "0"))
    ys, us, vs = yuv_expected(w, h)
    for plane, exp, tol in (("y", ys, 1.0), ("u", us, 2.0), ("v", vs, 2.0)):
        raw = bytes.fromhex(got.get(f"sws.{plane}", ""))
        diff = max((abs(b - e) for b, e in zip(raw, exp)), default=math.inf) if len(raw) == len(exp) else math.inf
        check(f"sws.{plane}", diff <= tol, f"max |diff| {diff:.2f} over {len(raw)} px")
    bad = 0
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}".rstrip())
        bad += not ok
    print(f"{len(results) - bad}/{len(results)} checks passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
