"""Chaos suite: prints the run's counts at the end of the session (and writes them as JSON to
$CHAOS_SUMMARY when set). See README.md in this directory."""
import json
import os

from chaos_lib import Summary


def pytest_terminal_summary(terminalreporter):
    if not Summary.counts and not Summary.notes:
        return
    tr = terminalreporter
    tr.section("chaos summary")
    for key in sorted(Summary.counts):
        tr.write_line(f"{key}: {Summary.counts[key]}")
    for note in Summary.notes:
        tr.write_line(note)
    path = os.environ.get("CHAOS_SUMMARY")
    if path:
        with open(path, "w") as f:
            json.dump({"counts": Summary.counts, "notes": Summary.notes}, f, indent=1, sort_keys=True)
