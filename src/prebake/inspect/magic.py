"""The first bytes of every format prebake reads: the one table the registry's cheap
pre-checks and the readers' own ``sniff`` both use (docs/binary-formats.md §0).

Nothing is imported here, so the registry can decide which reader module to import from it.
"""

from __future__ import annotations

AR = b"!<arch>\n"
AR_THIN = b"!<thin>\n"
ELF = b"\x7fELF"
WASM = b"\x00asm"
BITCODE_RAW = b"BC\xc0\xde"
BITCODE_WRAPPER = b"\xde\xc0\x17\x0b"  # 0x0B17C0DE, little-endian
# thin Mach-O: MH_MAGIC (0xFEEDFACE) and MH_MAGIC_64 (0xFEEDFACF), in either byte order
MACHO = (b"\xfe\xed\xfa\xce", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe")
# fat Mach-O: FAT_MAGIC (0xCAFEBABE, shared with Java class files) and FAT_MAGIC_64, big-endian
MACHO_FAT = (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf")
PE = b"MZ"  # the DOS stub every PE image starts with
