"""torch.profiler of the stand-in (see __init__.py): writes an empty trace."""
import enum
import json


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


class profile:
    def __init__(self, activities=()):
        self.activities = activities

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def export_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump({"traceEvents": []}, f)
