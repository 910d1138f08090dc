#!/bin/sh
# Every C block of the given Markdown files is a verbatim part of an example that CTest builds
# and runs (examples/*.c), so the documented code cannot rot. Indentation may differ.
# Usage: check_readme_code.sh EXAMPLES_DIR FILE.md...
exec python3 - "$@" <<'PY'
import pathlib, re, sys
def lines(text):
    return "\n".join(line.strip() for line in text.strip().splitlines())
examples = [lines(p.read_text()) for p in pathlib.Path(sys.argv[1]).glob("*.c")]
bad = 0
for md in sys.argv[2:]:
    blocks = re.findall(r"```c\n(.*?)```", pathlib.Path(md).read_text(), flags=re.S)
    if not blocks:
        print(f"{md}: no C block"); bad += 1
    for block in blocks:
        if not any(lines(block) in source for source in examples):
            print(f"{md}: this C block is not in examples/*.c:\n{block[:300]}"); bad += 1
sys.exit(1 if bad else 0)
PY
