"""nb's own account of a run, from its table's footer: what it recorded,
dropped and joined, and what its calls and stacks cost the program."""

PREFIXES = ("Calls: ", "nb's own cost", "Device records", "Stacks taken", "Calls recorded without their stack")


def footer_lines(table_path):
    """The footer lines of one `.table.txt` worth keeping beside a figure;
    [] when the file is missing (a dormant shim writes none)."""
    try:
        with open(table_path) as f:
            return [line.strip() for line in f if line.startswith(PREFIXES)]
    except OSError:
        return []


def dropped(table_path):
    """Records dropped, host and device: the 'Calls: N, records: N, dropped:
    N' line (host calls) plus the device records CUPTI or nb dropped ('N
    dropped by CUPTI', 'Device records dropped by nb (...): N'); None without
    a table."""
    host, device = None, 0
    for line in footer_lines(table_path):
        if line.startswith("Calls: ") and "dropped: " in line:
            host = int(line.rsplit("dropped: ", 1)[1].split()[0].rstrip(","))
        elif line.startswith("Device records dropped by nb") and "): " in line:
            device += int(line.rsplit("): ", 1)[1].split()[0])
        elif line.startswith("Device records: ") and " dropped by CUPTI" in line:
            device += int(line.split(" dropped by CUPTI", 1)[0].rsplit("(", 1)[1])
    return None if host is None else host + device
