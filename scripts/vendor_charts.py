#!/usr/bin/env python3
"""Refresh the JavaScript vendored into `roofline serve`'s static files, from the npm registry.

    python scripts/vendor_charts.py                    # the versions pinned below
    python scripts/vendor_charts.py --version 4.1.2    # another plotly.js-dist-min version

Two packages: `plotly.js-dist-min` (the pages' charts, MIT) and `swagger-ui-dist` (the /docs page, Apache-2.0,
so the API documentation needs no CDN either). For each, the tarball named by the registry's metadata is
checked against the registry's sha512 `integrity` field, and the files below are written with the package's
licence and a `<name>.VERSION` file (version, tarball URL, integrity) into src/roofline/serve/static/vendor/.
Only this script touches the network; the server never does (the pages work offline). Standard library only,
so it runs before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import tarfile
import urllib.request
from pathlib import Path

REGISTRY = "https://registry.npmjs.org"
DEST = Path(__file__).resolve().parents[1] / "src" / "roofline" / "serve" / "static" / "vendor"
#: package -> (vendored version: bump it here and re-run to refresh, {file in the tarball: name written}, stem)
PACKAGES = {
    "plotly.js-dist-min": ("4.1.2", {"package/plotly.min.js": "plotly.min.js",
                                     "package/LICENSE": "plotly.LICENSE.txt"}, "plotly"),
    "swagger-ui-dist": ("5.35.0", {"package/swagger-ui-bundle.js": "swagger-ui-bundle.js",
                                   "package/swagger-ui.css": "swagger-ui.css",
                                   "package/LICENSE": "swagger-ui.LICENSE.txt"}, "swagger-ui"),
}


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return resp.read()


def vendor(package: str, version: str, files: dict, stem: str) -> None:
    meta = json.loads(_get(f"{REGISTRY}/{package}/{version}"))
    url, integrity = meta["dist"]["tarball"], meta["dist"]["integrity"]
    algo, _, want = integrity.partition("-")
    if algo != "sha512":
        raise SystemExit(f"error: registry integrity for {package}@{version} is {algo}, expected sha512")
    blob = _get(url)
    if base64.b64encode(hashlib.sha512(blob).digest()).decode() != want:
        raise SystemExit(f"error: {url} does not match the registry's sha512; not writing anything")
    DEST.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member, name in files.items():
            (DEST / name).write_bytes(tar.extractfile(member).read())
    (DEST / f"{stem}.VERSION").write_text(f"{package} {version}\n{url}\n{integrity}\nlicense: {meta.get('license')}\n")
    print(f"wrote {', '.join(files.values())} ({package} {version}, {meta.get('license')}) to {DEST}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", help="plotly.js-dist-min version (default: the pinned one)")
    args = ap.parse_args(argv)
    for package, (version, files, stem) in PACKAGES.items():
        if package == "plotly.js-dist-min" and args.version:
            version = args.version
        vendor(package, version, files, stem)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
