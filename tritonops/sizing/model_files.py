"""Reading a model directory's files without trusting them.

Only regular files are read: a FIFO or a device named config.json would block or never end.
Whole files (config.json, the index) and safetensors headers are read through `values.files`
(the check is made on the opened descriptor). Reads are capped.
"""

from __future__ import annotations

import json
from pathlib import Path

from tritonops.errors import InputError
from tritonops.units import MIB
from tritonops.values.files import read_regular_file

JSON_FILE_MAX_BYTES = 16 * MIB   # config.json and index files are kilobytes


def read_json_file(path: Path, what: str, limit: int = JSON_FILE_MAX_BYTES):
    """The parsed JSON of a regular file of at most `limit` bytes; InputError naming `what`."""
    return parse_json(read_regular_file(path, max_bytes=limit, what=what), what, str(path))


def parse_json(raw: bytes, what: str, where: str):
    """JSON from bytes; InputError for anything that is not (bad UTF-8, nesting too deep, ...)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as err:   # UnicodeDecodeError is a ValueError
        detail = "nested too deeply" if isinstance(err, RecursionError) else str(err).splitlines()[0][:200]
        raise InputError(f"malformed {what}: {detail}", where) from None

