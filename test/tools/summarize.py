#!/usr/bin/env python3
"""Sums test cases over a meson test log: Catch2 programs report how many
test cases passed and failed; any other test (or a Catch2 program that died
before its summary) counts as one. Prints 'N passed, M failed' as its last
line; exits 1 if anything failed."""
import json
import re
import sys

ALL_PASSED = re.compile(r"All tests passed \(\d+ assertions? in (\d+) test cases?\)")
SOME_FAILED = re.compile(r"test cases:\s*(\d+) \|\s*(\d+) passed \|\s*(\d+) failed")


def main():
    passed = failed = 0
    with open(sys.argv[1]) as f:
        for line in f:
            t = json.loads(line)
            out = t.get("stdout") or ""
            ok = t.get("result") in ("OK", "EXPECTEDFAIL")
            m_all, m_some = ALL_PASSED.search(out), SOME_FAILED.search(out)
            if m_all and ok:
                passed += int(m_all.group(1))
            elif m_some:
                passed += int(m_some.group(2))
                failed += max(int(m_some.group(3)), 0 if ok else 1)
            elif ok:
                passed += 1
            else:
                failed += 1
                print(f"{t.get('name')}: {t.get('result')}", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
