"""nbprof report: python3 -m nb_report (from scripts/), or the nb-report
zip application the build makes of this package."""
import sys

from nb_report.cli import main

sys.exit(main())
