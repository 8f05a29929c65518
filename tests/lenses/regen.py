"""Rewrite the golden files: `python -m tests.lenses.regen` (needs `make clients`).

Each stream's lens results (golden/NAME.json), and the grades made from them against the
stream's intended reading (golden/grades/NAME.json). `python -m tests.lenses.regen --grades`
rewrites only the grades, from the lens results kept (no library is run): for a change in how
they are graded or worded.
"""

from __future__ import annotations

import json
import sys

from tests.lenses.streams import (
    STREAMS,
    golden_path,
    grade_document,
    grade_path,
    load_golden,
    normal,
    pinned_versions,
    run_in_batches,
)
from webapp.core.readers import read
from webapp.lenses.ours import policy_result
from webapp.lenses.pins import POLICY_COLUMNS
from webapp.lenses.runner import default_lenses


def grades_only() -> int:
    """Rewrite the grade goldens from the lens goldens kept."""
    for name in STREAMS:
        path = grade_path(name)
        document = grade_document(name, load_golden(name))
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--grades"]:
        return grades_only()
    names = list(STREAMS)
    texts = [STREAMS[name] for name in names]
    by_lens = {}
    for lens in default_lenses():
        results = run_in_batches(lens, texts)
        if any(result.status == "unavailable" for result in results):
            print(f"{lens.client} is unavailable: run `make clients`", file=sys.stderr)
            return 1
        by_lens[lens.client] = results
    for i, name in enumerate(names):
        records = read(texts[i], "sse").records
        document = {
            "stream": name,
            "versions": pinned_versions(),
            "results": {
                client: normal(results[i], texts[i]) for client, results in by_lens.items()
            },
            "policies": {
                policy: normal(policy_result(records, policy), texts[i])
                for policy in POLICY_COLUMNS
            },
        }
        path = golden_path(name)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path}")
        grades = grade_path(name)
        grades.parent.mkdir(exist_ok=True)
        grades.write_text(
            json.dumps(grade_document(name, document), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        print(f"wrote {grades}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
