"""The .eh_frame rows that cover given addresses of a module, as readelf
interprets them (readelf -wF), and the code at the function's start:
why nb's unwinder leaves a frame of it to libunwind (NB_LOG=debug names
the module and offset).

  fde_at.py MODULE OFFSET_HEX...
"""
import subprocess
import sys


def main(module, offsets):
    want = [int(o, 16) for o in offsets]
    found = {a: [] for a in want}
    proc = subprocess.Popen(["readelf", "-wF", module], stdout=subprocess.PIPE, text=True, errors="replace")
    current, lo = None, 0
    for line in proc.stdout:
        if " FDE " in line and "pc=" in line:
            rng = line.split("pc=", 1)[1].split()[0]
            lo, hi = (int(x, 16) for x in rng.split(".."))
            current = [a for a in want if lo <= a < hi]
            for a in current:
                found[a].append(line.rstrip())
            continue
        if not line.strip():
            current = None
            continue
        if current:
            for a in current:
                found[a].append(line.rstrip())
    proc.wait()
    for a in want:
        print(f"== {module}+0x{a:x}: {'no FDE covers it' if not found[a] else ''}")
        for line in found[a][:40]:
            print(line)
        if found[a]:
            start = int(found[a][0].split("pc=", 1)[1].split("..")[0], 16)
            out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address=0x{start:x}",
                                  f"--stop-address=0x{start + 48:x}", module], capture_output=True, text=True)
            print("\n".join(out.stdout.splitlines()[6:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
