"""Parses /metrics texts with the official Prometheus Python client's parser, for
tests/tests/metrics.rs.

Reads a JSON object on stdin, {"<service>": "<the /metrics text>", ...}, parses each text with
prometheus_client.parser.text_string_to_metric_families and prints, as JSON on stdout, what the
parser saw: {"<service>": {"<family>": {"type": "...", "samples": [[name, labels, value], ...]}}}.
A text the parser refuses ends the run with status 1, the service and the parser's error on
stderr.
"""

import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def parse(text):
    families = {}
    for family in text_string_to_metric_families(text):
        if family.name in families:
            raise ValueError(f"family {family.name} appears twice")
        families[family.name] = {
            "type": family.type,
            "samples": [
                # JSON has no infinities; no sample value here is one, but say so if it were.
                [s.name, s.labels, s.value if math.isfinite(s.value) else str(s.value)]
                for s in family.samples
            ],
        }
    return families


def main():
    texts = json.load(sys.stdin)
    parsed = {}
    for service, text in texts.items():
        try:
            parsed[service] = parse(text)
        except Exception as err:  # the parser raises ValueError and friends
            print(f"{service}: /metrics does not parse: {err!r}", file=sys.stderr)
            return 1
    json.dump(parsed, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
