#!/usr/bin/env python3
"""make bench-photos: the page cache of the files given.

  pagecache.py evict fadvise|drop_caches FILE...   drop them from the page cache, then print
                                                   "<method that worked> <resident pages> <pages>"
  pagecache.py resident FILE...                    print "<resident pages> <pages>"

drop_caches writes 1 to /proc/sys/vm/drop_caches (the whole page cache, root only, refused in
some containers); fadvise calls posix_fadvise(POSIX_FADV_DONTNEED) on each file, which drops
that file's clean pages alone. Either is checked with mincore(2); drop_caches falls back to
fadvise when it is refused or leaves pages behind."""

import ctypes
import ctypes.util
import mmap
import os
import sys

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident(paths):
    """Pages of the files in the page cache, and pages in all."""
    cached = total = 0
    for path in paths:
        size = os.path.getsize(path)
        if size == 0:
            continue
        pages = (size + PAGE - 1) // PAGE
        fd = os.open(path, os.O_RDONLY)
        try:
            address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), "mmap " + path)
            try:
                vector = (ctypes.c_ubyte * pages)()
                if libc.mincore(address, size, vector) != 0:
                    raise OSError(ctypes.get_errno(), "mincore " + path)
                cached += sum(b & 1 for b in vector)
            finally:
                libc.munmap(address, size)
        finally:
            os.close(fd)
        total += pages
    return cached, total


def fadvise(paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return True
    except OSError:
        return False


def main():
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "resident":
        print(*resident(rest))
    elif command == "evict":
        method, paths = rest[0], rest[1:]
        used = "fadvise"
        if method == "drop_caches" and drop_caches():
            used = "drop_caches"
            if resident(paths)[0] > 0:
                fadvise(paths)
                used = "drop_caches+fadvise"
        else:
            fadvise(paths)
        print(used, *resident(paths))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
