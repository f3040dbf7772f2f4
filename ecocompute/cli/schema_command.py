"""python -m ecocompute.cli.schema_command > schema/energy.schema.json: this tool's report
schema, as the report model generates it (report/schema.py; a test fails on drift)."""

from __future__ import annotations

import sys

from ecocompute.report.schema import schema_text

if __name__ == "__main__":
    sys.stdout.write(schema_text())
