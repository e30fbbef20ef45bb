#!/usr/bin/env python3
"""The layers' dependency rules, read from the sources and the meson files.

    core/       nothing of ours
    formats/    nothing of ours
    shim/       core/
    collector/  core/, formats/
    scripts/    core/, formats/

A file may always include its own directory. Includes are read as written
("dir/file.h"); a quoted include of a bare name must be a file beside the
includer. A meson.build may compile only files of its own directory.
Prints each violation on a line and exits 1 if there is any."""
import os
import re
import sys

ALLOWED = {
    "core": set(),
    "formats": set(),
    "shim": {"core"},
    "collector": {"core", "formats"},
    "scripts": {"core", "formats"},
}
SOURCE = re.compile(r"\.(c|cc|cpp|h|hpp|S)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MESON_PATH = re.compile(r"'(\.\./[^']*)'")


def check(top):
    problems = []
    for layer, allowed in ALLOWED.items():
        base = os.path.join(top, layer)
        for root, _dirs, files in os.walk(base):
            for name in files:
                path = os.path.join(root, name)
                rel = os.path.relpath(path, top)
                if name == "meson.build":
                    with open(path) as f:
                        for m in MESON_PATH.finditer(f.read()):
                            problems.append(f"{rel}: builds {m.group(1)}, outside {layer}/")
                    continue
                if not SOURCE.search(name):
                    continue
                with open(path, errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    inc = m.group(1)
                    line = text.count("\n", 0, m.start()) + 1
                    head = inc.split("/", 1)[0] if "/" in inc else None
                    if head is None or head == "..":
                        if not os.path.exists(os.path.join(root, inc)) or ".." in inc:
                            problems.append(f"{rel}:{line}: includes \"{inc}\" by a relative path")
                        continue
                    if head == layer or head not in ALLOWED:
                        continue  # its own layer, or not a directory of ours
                    if head not in allowed:
                        problems.append(f"{rel}:{line}: {layer}/ may not include {inc}")
    return problems


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = check(os.path.abspath(top))
    for p in problems:
        print(p)
    print(f"layers: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
