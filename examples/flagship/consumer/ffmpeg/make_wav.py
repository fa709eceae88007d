#!/usr/bin/env python3
"""Write the consumer's input: a WAV of a known signal (standard library only).

16-bit stereo, 44100 Hz, 1 s: left = 440 Hz sine at 0.5 full scale, right = 1000 Hz sine at
0.25 full scale, both plus a small deterministic LCG noise (so FLAC has real work and a
lossless round trip is a real test). check.py recomputes the same samples with signal().
"""
import math
import sys
import wave

RATE = 44100
SECONDS = 1
CHANNELS = 2


def signal() -> list[tuple[int, int]]:
    """The samples, (left, right) per frame, as check.py expects them."""
    state = 12345
    frames = []
    for n in range(RATE * SECONDS):
        out = []
        for freq, amp in ((440.0, 0.5), (1000.0, 0.25)):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            noise = (state >> 16) % 65 - 32  # -32..32
            v = round(amp * 32767 * math.sin(2 * math.pi * freq * n / RATE)) + noise
            out.append(max(-32768, min(32767, v)))
        frames.append((out[0], out[1]))
    return frames


def pcm_bytes(frames: list[tuple[int, int]]) -> bytes:
    return b"".join(l.to_bytes(2, "little", signed=True) + r.to_bytes(2, "little", signed=True)
                    for l, r in frames)


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "tone.wav"
    with wave.open(path, "wb") as w:
        w.setnchannels(CHANNELS)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm_bytes(signal()))
    print(path)


if __name__ == "__main__":
    main()
