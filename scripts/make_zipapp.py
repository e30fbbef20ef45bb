#!/usr/bin/env python3
"""Packs a Python package into one executable file (a zip application, as
python3 -m zipapp makes) that runs the package's __main__.py:

    make_zipapp.py OUTPUT PACKAGE_DIR

Only the package's .py files go in (never __pycache__), under the package's
name; its __main__.py is also the archive's own, so it must import the
package by name (from nb_report.cli import main). A build step: the build
tree's nb-report follows its sources at each build."""
import os
import sys
import zipfile

out, package = sys.argv[1], os.path.normpath(sys.argv[2])
name = os.path.basename(package)
tmp = out + ".tmp"
with open(tmp, "wb") as f:
    f.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for file in sorted(os.listdir(package)):
            if file.endswith(".py"):
                z.write(os.path.join(package, file), f"{name}/{file}")
        z.write(os.path.join(package, "__main__.py"), "__main__.py")
os.chmod(tmp, 0o755)
os.replace(tmp, out)
