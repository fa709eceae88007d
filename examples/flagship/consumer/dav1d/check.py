#!/usr/bin/env python3
"""Check av1check's numbers against the reference decoder's.

    check.py IN.ivf OUTPUT.txt [--version 1.5.1]   judge av1check's stdout (OUTPUT.txt)
    check.py IN.ivf --print                        the reference's numbers, as av1check prints them

The reference decoder is FFmpeg's ``libdav1d`` wrapper in PyPI's ``av`` (PyAV) wheel: the
demuxer, the decoder and the library are that wheel's own build (its ``libdav1d.so.7``), so
nothing of the asset under test takes part. AV1 decoding is exact (the specification fixes
every output sample), so a conforming decoder of the same stream gives the same planes, and
a checksum over them must match to the bit. The numbers, defined here and in av1check.c:

- ``frames``: pictures output, in output order;
- ``size``: width x height of the first picture, ``mixed`` if any differs;
- ``checksum``: FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over every
  picture in output order, each picture's Y rows, then U, then V (none for 4:0:0), each row
  exactly the plane's width in samples: one byte a sample at 8 bits, two (little-endian) above;
  a chroma plane's width and height are the luma's halved, rounded up, where subsampled;
- ``frame.N``: the same hash over picture N alone, and its size, bit depth and layout.

Prints one line per check and exits 1 if any fails.
"""
import argparse
import sys

import av

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK = (1 << 64) - 1
# FFmpeg's pixel formats the libdav1d wrapper outputs, as (layout, bit depth)
FORMATS = {"gray": ("400", 8), "yuv420p": ("420", 8), "yuv422p": ("422", 8),
           "yuv444p": ("444", 8), "gray10le": ("400", 10), "yuv420p10le": ("420", 10),
           "yuv422p10le": ("422", 10), "yuv444p10le": ("444", 10), "gray12le": ("400", 12),
           "yuv420p12le": ("420", 12), "yuv422p12le": ("422", 12), "yuv444p12le": ("444", 12)}


def fnv1a(h: int, data: bytes) -> int:
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def picture_rows(frame: "av.VideoFrame") -> tuple[str, int, list[bytes]]:
    """The picture's layout, bit depth and its rows (Y, then U, then V), each exactly the
    plane's width in samples."""
    layout, depth = FORMATS[frame.format.name]
    size = 1 if depth == 8 else 2
    rows = []
    for plane in frame.planes:
        data = bytes(plane)
        for y in range(plane.height):
            rows.append(data[y * plane.line_size:y * plane.line_size + plane.width * size])
    return layout, depth, rows


def reference(path: str) -> list[str]:
    """The reference decoder's lines for the stream at ``path``."""
    lines: list[str] = []
    total, sizes = FNV_OFFSET, []
    decoder = av.CodecContext.create("libdav1d", "r")
    with av.open(path) as container:
        stream = container.streams.video[0]
        packets = [p for p in container.demux(stream) if p.size]
        frames = [f for p in packets for f in decoder.decode(p)] + list(decoder.decode(None))
    for n, frame in enumerate(frames):
        layout, depth, rows = picture_rows(frame)
        one = FNV_OFFSET
        for row in rows:
            one = fnv1a(one, row)
            total = fnv1a(total, row)
        sizes.append(f"{frame.width}x{frame.height}")
        lines.append(f"frame.{n}={frame.width}x{frame.height} {depth}bit {layout} {one:016x}")
    lines.append(f"frames={len(frames)}")
    lines.append(f"size={sizes[0] if sizes and len(set(sizes)) == 1 else 'mixed'}")
    lines.append(f"checksum={total:016x}")
    return lines


def parse(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("ivf")
    ap.add_argument("output", nargs="?")
    ap.add_argument("--print", action="store_true", help="print the reference's numbers")
    ap.add_argument("--version", default=None, help="the dav1d release the asset must report")
    a = ap.parse_args()
    want = reference(a.ivf)
    if a.print or a.output is None:
        print("\n".join(want))
        return 0
    with open(a.output, encoding="utf-8", errors="replace") as fh:
        got = parse(fh.read())
    results: list[tuple[str, bool, str]] = []
    results.append(("done", got.get("done") == "1", "av1check ran to the end"))
    if a.version:
        results.append(("version", got.get("dav1d.version") == a.version,
                        got.get("dav1d.version", "")))
    results.append(("flush", got.get("again") == "identical",
                    "after dav1d_flush the stream decodes again to the same numbers"))
    for key, value in parse("\n".join(want)).items():
        results.append((key, got.get(key) == value, f"{got.get(key)} (reference {value})"))
    bad = 0
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}".rstrip())
        bad += not ok
    print(f"{len(results) - bad}/{len(results)} checks passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
