#!/usr/bin/env python3
"""The fraction of a PNG's pixels that differ from its background (the
colour of its top-left pixel) by more than a little: a blank screenshot
is 0. Reads 8-bit RGB or RGBA PNGs (what Chromium writes) with the
standard library only.

    test/png_ink.py picture.png   -> prints e.g. 0.0734
"""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                sys.exit(f"{path}: only 8-bit RGB/RGBA without interlace is read here")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return rows, width, height, bpp


def main():
    rows, width, height, bpp = pixels(sys.argv[1])
    bg = rows[0][:3]
    ink = sum(
        1
        for line in rows
        for x in range(0, width * bpp, bpp)
        if max(abs(line[x + k] - bg[k]) for k in range(3)) > 24
    )
    print(f"{ink / (width * height):.4f}")


if __name__ == "__main__":
    main()
