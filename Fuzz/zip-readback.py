#!/usr/bin/env python3
"""Reads back each NAME.zip in a folder with Python's zipfile and compares it with NAME.json,
the members the writer was given (name, base64 contents), in order. Exits 1 on a difference.

FuzzCorpusReplayTests writes the folder: one archive per entry of Fuzz/Corpus/zip."""
import base64
import json
import pathlib
import sys
import zipfile

failures = []
folder = pathlib.Path(sys.argv[1])
for manifest in sorted(folder.glob("*.json")):
    archive = manifest.with_suffix(".zip")
    expected = [(m["name"], base64.b64decode(m["contents"])) for m in json.loads(manifest.read_text())]
    try:
        with zipfile.ZipFile(archive) as z:
            bad = z.testzip()
            if bad is not None:
                failures.append(f"{archive.name}: the CRC of {bad!r} is wrong")
            found = [(info.filename, z.read(info)) for info in z.infolist()]
    except Exception as error:  # any refusal by the reader is a finding
        failures.append(f"{archive.name}: {type(error).__name__}: {error}")
        continue
    if found != expected:
        names = [name for name, _ in found]
        failures.append(f"{archive.name}: read back {names!r}, written {[name for name, _ in expected]!r}")
for failure in failures:
    print(failure)
sys.exit(1 if failures else 0)
