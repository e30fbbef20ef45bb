"""A Chrome trace read once, in bounded memory: the top-level object's keys
are decoded whole (nbTable, nbRun, ...), the events of "traceEvents" one at
a time and handed to a function, so that a trace of gigabytes is checked
without holding it. Every byte is parsed as JSON, in the same grammar
json.load takes; a trace that json.load would refuse raises ValueError
here too. Plain or gzipped (a name ending in .gz)."""
import gzip
import json
import re

CHUNK = 1 << 22  # characters read at a time
LONGEST = 1 << 28  # a value longer than this is taken for a broken one, not read on to the end
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _Reader:
    def __init__(self, f):
        self.f, self.buf, self.pos, self.eof = f, "", 0, False

    def more(self):
        """Reads another chunk; False at the end of the file."""
        if self.eof:
            return False
        text = self.f.read(CHUNK)
        if not text:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + text  # drops what was parsed
        self.pos = 0
        return True

    def peek(self):
        """The next character that is not white space ('' at the end)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos:self.pos + 1]

    def expect(self, chars):
        c = self.peek()
        if not c or c not in chars:
            raise ValueError(f"expected one of {chars!r}, found {c or 'the end'!r}")
        self.pos += 1
        return c

    def value(self):
        self.peek()
        while True:
            try:
                v, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if len(self.buf) - self.pos > LONGEST or not self.more():
                    raise ValueError(str(e)) from None
                continue
            # A number or literal that ends where the buffer does may go on
            # in the next chunk.
            if end < len(self.buf) or not self.more():
                self.pos = end
                return v


def read(path, on_event):
    """Calls on_event(event) for each element of traceEvents, in order;
    returns the other top-level keys as a dict. Raises ValueError where the
    file is not JSON (or its top level not an object), OSError where it
    cannot be read."""
    opener = gzip.open if path.endswith(".gz") else open
    top = {}
    with opener(path, "rt", encoding="utf-8") as f:
        r = _Reader(f)
        r.expect("{")
        if r.peek() == "}":
            r.pos += 1
        else:
            while True:
                key = r.value()
                if not isinstance(key, str):
                    raise ValueError(f"a key that is not a string: {key!r}")
                r.expect(":")
                if key == "traceEvents" and r.peek() == "[":
                    r.pos += 1
                    if r.peek() == "]":
                        r.pos += 1
                    else:
                        while True:
                            on_event(r.value())
                            if r.expect(",]") == "]":
                                break
                    top[key] = None  # streamed, not kept
                else:
                    top[key] = r.value()
                if r.expect(",}") == "}":
                    break
        if r.peek():
            raise ValueError("more after the top-level object")
    return top
