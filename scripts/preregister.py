"""Predict rows before their measured values exist (pre-registration).

    python scripts/preregister.py ROWS.yaml OUT.yaml [--commit HASH]
        (--commit when run from `git archive HASH`, which has no git history to ask)

ROWS.yaml has the format of src/roofline/validate/data/measurements.yaml without `measured`. For each row the
library's prediction (central value) and its interval over the efficiency factors' corners are written to
OUT.yaml with the date and the git commit they were computed at. The measured values are added to the
dataset in a later commit; `roofline validate` then scores the rows as a held-out set.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import yaml

from roofline.validate.scenarios import Measurement, evaluate


def main(rows_path: str, out_path: str, commit: str | None = None) -> None:
    doc = yaml.load(open(rows_path).read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if commit is None:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    if not commit:
        raise SystemExit("no git commit to record (an exported tree?): pass --commit HASH, the commit it was taken from")
    out = []
    for row in doc["measurements"]:
        if "measured" in row:
            raise SystemExit(f"{row['id']}: a pre-registered row must not carry its measured value")
        meas = Measurement(id=row["id"], metric=row["metric"], scenario=row["scenario"], model=row["model"],
                           accelerator=row["accelerator"], chips=int(row["chips"]), measured=1.0,
                           unit=str(row.get("unit", "")), source=str(row["source"]), date=str(row["date"]),
                           reliability=str(row.get("reliability", "medium")), sharding="", row=dict(row))
        ev = evaluate(meas)
        out.append({"id": row["id"], "predicted": float(ev.predicted), "low": float(ev.low), "high": float(ev.high),
                    "unit": row.get("unit", "")})
        print(f"{row['id']:42s} {ev.predicted:12.4g}  [{ev.low:.4g}, {ev.high:.4g}]  {row.get('unit', '')}")
    with open(out_path, "w") as fh:
        yaml.safe_dump({"predicted_on": dt.date.today().isoformat(), "at_commit": commit, "rows": rows_path,
                        "predictions": out}, fh, sort_keys=False)


if __name__ == "__main__":
    args = sys.argv[1:]
    at = None
    if "--commit" in args:
        i = args.index("--commit")
        at = args[i + 1]
        del args[i:i + 2]
    main(args[0], args[1], at)
