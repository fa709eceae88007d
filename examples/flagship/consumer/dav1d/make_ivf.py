#!/usr/bin/env python3
"""Write the consumer's input: a short AV1 stream in an IVF file, encoded here.

    make_ivf.py OUT.ivf

12 frames of 160x96 8-bit 4:2:0 at 24 fps, a pattern that moves (a diagonal luma ramp sliding
by 3 pixels a frame, a bright square crossing it, chroma ramps), so the stream has a key frame
and inter frames. Encoded by SVT-AV1 (``libsvtav1``), the AV1 encoder PyPI's ``av`` (PyAV)
ships in its wheel, and muxed by FFmpeg's ``ivf`` muxer, the same wheel's. The encoder's bytes
are not what the consumer is judged by: check.py decodes whatever this wrote with the reference
decoder and the consumer must give the same numbers.
"""
import sys

import av

WIDTH, HEIGHT, FRAMES, FPS = 160, 96, 12, 24


def planes(t: int) -> tuple[bytes, bytes, bytes]:
    """Frame ``t``'s Y, U and V planes, rows of exactly the plane's width."""
    y = bytearray()
    for row in range(HEIGHT):
        for col in range(WIDTH):
            inside = 40 + 8 * t <= col < 72 + 8 * t and 24 <= row < 56
            y.append(235 if inside else 16 + (col + 2 * row + 3 * t) % 200)
    cw, ch = WIDTH // 2, HEIGHT // 2
    u = bytes(64 + (2 * col + t) % 128 for row in range(ch) for col in range(cw))
    v = bytes(64 + (3 * row + 2 * t) % 128 for row in range(ch) for col in range(cw))
    return bytes(y), u, v


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "pattern.ivf"
    with av.open(path, "w", format="ivf") as out:
        stream = out.add_stream("libsvtav1", rate=FPS,
                                options={"preset": "10", "crf": "35", "g": "12"})
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        for t in range(FRAMES):
            frame = av.VideoFrame(WIDTH, HEIGHT, "yuv420p")
            for plane, data in zip(frame.planes, planes(t), strict=True):
                width = plane.width
                # a plane's rows may be padded (line_size >= width): copy row by row
                buf = bytearray(plane.line_size * plane.height)
                for row in range(plane.height):
                    buf[row * plane.line_size:row * plane.line_size + width] = \
                        data[row * width:(row + 1) * width]
                plane.update(bytes(buf))
            frame.pts = t
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    print(path)


if __name__ == "__main__":
    main()
