#!/usr/bin/env python3
"""Copies a script into the build with its @NAME@ values filled in, keeping
it executable:  fill_in.py INPUT OUTPUT NAME=VALUE...  (a build step, so
that the build tree's copy follows its source at each build)."""
import os
import sys

src, dst, *pairs = sys.argv[1:]
with open(src, encoding="utf-8") as f:
    body = f.read()
for pair in pairs:
    name, value = pair.split("=", 1)
    body = body.replace("@" + name + "@", value)
with open(dst, "w", encoding="utf-8") as f:
    f.write(body)
os.chmod(dst, 0o755)
