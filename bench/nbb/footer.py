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
    """Records dropped, from the 'Calls: N, records: N, dropped: N' line, or
    None without a table."""
    for line in footer_lines(table_path):
        if line.startswith("Calls: ") and "dropped: " in line:
            return int(line.rsplit("dropped: ", 1)[1].split()[0].rstrip(","))
    return None
