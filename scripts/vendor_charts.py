#!/usr/bin/env python3
"""Refresh the charting library vendored into `roofline serve`'s static files, from the npm registry.

    python scripts/vendor_charts.py            # the version pinned below
    python scripts/vendor_charts.py --version 4.1.2

Downloads the `plotly.js-dist-min` tarball named by the registry's metadata, checks it against the registry's
sha512 `integrity` field, and writes `plotly.min.js`, its `LICENSE` and a `VERSION` file (version, tarball URL,
integrity) into src/roofline/serve/static/vendor/. Only this script touches the network; the server never does
(the page works offline). Standard library only, so it runs before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path

PACKAGE = "plotly.js-dist-min"
VERSION = "4.1.2"  # the vendored version; bump it here and re-run to refresh
REGISTRY = "https://registry.npmjs.org"
DEST = Path(__file__).resolve().parents[1] / "src" / "roofline" / "serve" / "static" / "vendor"
FILES = {"package/plotly.min.js": "plotly.min.js", "package/LICENSE": "plotly.LICENSE.txt"}


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 - fixed https registry URL
        return resp.read()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default=VERSION, help=f"{PACKAGE} version (default {VERSION})")
    args = ap.parse_args(argv)
    meta = json.loads(_get(f"{REGISTRY}/{PACKAGE}/{args.version}"))
    url, integrity = meta["dist"]["tarball"], meta["dist"]["integrity"]
    algo, _, want = integrity.partition("-")
    if algo != "sha512":
        print(f"error: registry integrity for {PACKAGE}@{args.version} is {algo}, expected sha512", file=sys.stderr)
        return 1
    blob = _get(url)
    got = base64.b64encode(hashlib.sha512(blob).digest()).decode()
    if got != want:
        print(f"error: {url} does not match the registry's sha512; not writing anything", file=sys.stderr)
        return 1
    DEST.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member, name in FILES.items():
            (DEST / name).write_bytes(tar.extractfile(member).read())
    (DEST / "VERSION").write_text(f"{PACKAGE} {args.version}\n{url}\n{integrity}\nlicense: {meta.get('license')}\n")
    print(f"wrote {', '.join(FILES.values())} ({PACKAGE} {args.version}, {meta.get('license')}) to {DEST}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
