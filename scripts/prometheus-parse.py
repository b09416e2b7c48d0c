#!/usr/bin/env python3
"""Fetches URL (a /metrics endpoint) and parses it with prometheus_client's OpenMetrics parser,
the strict one (it fails on a malformed exposition, a missing `# EOF`, a bad label), and also
with its classic Prometheus text parser. Prints the samples as JSON on stdout:

    [{"name": "mcpflow_requests_total", "labels": {...}, "value": 3.0, "type": "counter"}, ...]

Exits non-zero, with the parser's error on stderr, when either parser refuses the text.
"""
import json
import sys
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
from prometheus_client.parser import text_string_to_metric_families as classic


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: prometheus-parse.py URL", file=sys.stderr)
        return 2
    with urllib.request.urlopen(sys.argv[1], timeout=30) as response:
        content_type = response.headers.get("content-type", "")
        text = response.read().decode("utf-8")
    if not content_type.startswith("application/openmetrics-text"):
        print(f"unexpected content type: {content_type}", file=sys.stderr)
        return 1
    samples = []
    for family in openmetrics(text):
        for s in family.samples:
            samples.append({"name": s.name, "labels": s.labels, "value": s.value, "type": family.type})
    # The classic parser must read it too (Prometheus servers before OpenMetrics, other tools).
    classic_count = sum(len(f.samples) for f in classic(text))
    if classic_count == 0 and samples:
        print("the classic text parser read no sample", file=sys.stderr)
        return 1
    json.dump(samples, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
