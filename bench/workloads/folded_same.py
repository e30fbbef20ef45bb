"""Whether two runs' folded files hold the same stacks (weights aside):
the check that nb's unwinder and libunwind read the same frames, on two
runs of one program under NB_UNWIND=nb and NB_UNWIND=libunwind.

  folded_same.py A.device.folded B.device.folded
"""
import sys


def stacks(path):
    with open(path) as f:
        return {line.rsplit(" ", 1)[0] for line in f if line.strip()}


def main(a, b):
    sa, sb = stacks(a), stacks(b)
    print(f"{a}: {len(sa)} stacks; {b}: {len(sb)} stacks; in both: {len(sa & sb)}; "
          f"only in the first: {len(sa - sb)}; only in the second: {len(sb - sa)}")
    for s in sorted(sa - sb)[:3]:
        print("  only first:", s[-400:])
    for s in sorted(sb - sa)[:3]:
        print("  only second:", s[-400:])
    return 0 if sa == sb else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
